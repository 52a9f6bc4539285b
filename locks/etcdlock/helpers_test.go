//go:build etcd

package etcdlock_test

import (
	"context"
	"errors"
	"github.com/withlock/withlock/internal/testwait"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// newLocker is a Locker of the test server with a short TTL.
func newLocker(s *etcdtest.Server) *etcdlock.Locker {
	return &etcdlock.Locker{
		Endpoints:   []string{s.Endpoint},
		TTL:         5 * time.Second,
		DialTimeout: 2 * time.Second,
		Command:     "backup --full",
	}
}

// mustAcquire takes the lock or fails the test; the lock is released at
// the end of the test.
func mustAcquire(t *testing.T, l *etcdlock.Locker, runID string, wait time.Duration) *etcdlock.Lock {
	t.Helper()
	lock, err := l.Acquire(context.Background(), runID, wait)
	if err != nil {
		t.Fatalf("acquire %q: %v", runID, err)
	}
	t.Cleanup(func() { lock.Release() })
	return lock
}

// acquireInBackground waits for runID's lock on a goroutine, releases it at
// once if granted, and delivers the acquisition's error.
func acquireInBackground(l *etcdlock.Locker, runID string, wait time.Duration) <-chan error {
	got := make(chan error, 1)
	go func() {
		lock, err := l.Acquire(context.Background(), runID, wait)
		if err == nil {
			lock.Release()
		}
		got <- err
	}()
	return got
}

// acquiredWithin waits up to 10 s for an acquireInBackground to succeed;
// what names the moment it should have (for the failure).
func acquiredWithin(t *testing.T, got <-chan error, what string) {
	t.Helper()
	if err := testwait.Recv(t, got, 10*time.Second, "the lock after "+what); err != nil {
		t.Fatal(err)
	}
}

// lockWithin waits up to 10 s for a background acquisition's lock (held,
// or its error on failed); what names the moment it should have come. The
// caller releases the lock.
func lockWithin(t *testing.T, held <-chan *etcdlock.Lock, failed <-chan error, what string) *etcdlock.Lock {
	t.Helper()
	select {
	case lock := <-held:
		return lock
	case err := <-failed:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatalf("not in within 10 s of %s", what)
	}
	return nil
}

// lostWithin waits for the heartbeat to report loss and says how long it took.
func lostWithin(t *testing.T, lost <-chan error, d time.Duration) (error, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-lost:
		if !errors.Is(err, locks.ErrLost) {
			t.Errorf("loss reported as %v; want it to match locks.ErrLost", err)
		}
		return err, time.Since(start)
	case <-time.After(d):
		t.Fatalf("no loss reported within %s", d)
		return nil, 0
	}
}

// contenders lists the keys queued on runID's mutex.
func contenders(t *testing.T, s *etcdtest.Server, l *etcdlock.Locker, runID string) []string {
	t.Helper()
	resp, err := s.Client(t).Get(etcdtest.Ctx(t), l.MutexName(runID)+"/", clientv3WithPrefix()...)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

var waitFor = testwait.For

// checkNoLockGoroutines fails when goroutines of this package or of etcd
// clients outlive the locks (the embedded server's own are not counted).
func checkNoLockGoroutines(t *testing.T) {
	t.Helper()
	var leaked string
	ok := func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		leaked = ""
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "locks/etcdlock.") && !strings.Contains(g, "_test.") ||
				strings.Contains(g, "client/v3.(*lessor)") || strings.Contains(g, "client/v3.(*watchGrpcStream)") {
				leaked = g
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("goroutine left behind:\n%s", leaked)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
