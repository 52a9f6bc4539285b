//go:build etcd

package etcdlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

func clientv3WithPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }

// TestAcquireRelease: the lock is the owner key of the run id's mutex, under
// a lease of the TTL, with the holder's information as its value; release
// deletes the key and revokes the lease.
func TestAcquireRelease(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	lock, err := l.Acquire(context.Background(), "nightly-backup", 0)
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := "/withlock/run/nightly-backup/"
	if !strings.HasPrefix(lock.Key, wantPrefix) {
		t.Errorf("key %q; want it under %q", lock.Key, wantPrefix)
	}
	cl := s.Client(t)
	resp, err := cl.Get(etcdtest.Ctx(t), lock.Key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("owner key %s: %v %v", lock.Key, resp, err)
	}
	kv := resp.Kvs[0]
	if kv.Lease != int64(lock.Lease) || kv.CreateRevision != lock.FencingToken() {
		t.Errorf("key lease %x rev %d; want lease %x and the fencing token %d", kv.Lease, kv.CreateRevision, lock.Lease, lock.FencingToken())
	}
	var v map[string]any
	if err := json.Unmarshal(kv.Value, &v); err != nil {
		t.Fatalf("value %q: %v", kv.Value, err)
	}
	host, _ := os.Hostname()
	if v["pid"] != float64(os.Getpid()) || v["host"] != host || v["command"] != "backup --full" || v["run_id"] != "nightly-backup" {
		t.Errorf("holder value %s; want pid %d, host %s, command, run_id", kv.Value, os.Getpid(), host)
	}
	ttl, err := cl.TimeToLive(etcdtest.Ctx(t), lock.Lease)
	if err != nil || ttl.GrantedTTL != 5 {
		t.Errorf("lease granted TTL %v (%v); want 5", ttl, err)
	}
	env := lock.Env()
	for _, want := range []string{"WITHLOCK_RUN_ID=nightly-backup", "WITHLOCK_LOCK_KEY=" + lock.Key,
		"WITHLOCK_FENCING_TOKEN=" + strconv.FormatInt(lock.FencingToken(), 10)} {
		if !slices.Contains(env, want) {
			t.Errorf("env %q lacks %q", env, want)
		}
	}

	if err := lock.Release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	if keys := contenders(t, s, l, "nightly-backup"); len(keys) != 0 {
		t.Errorf("keys left after release: %q", keys)
	}
	if ttl, err := cl.TimeToLive(etcdtest.Ctx(t), lock.Lease); err != nil || ttl.TTL != -1 {
		t.Errorf("lease after release: %+v %v; want revoked (TTL -1)", ttl, err)
	}
	checkNoLockGoroutines(t)
}

// TestConflictNamesHolder: without a wait a held lock is an immediate
// *locks.HeldError naming the holder, and the loser leaves nothing queued.
func TestConflictNamesHolder(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	holder := mustAcquire(t, newLocker(s), "job", 0)

	l := newLocker(s)
	lock, err := l.Acquire(context.Background(), "job", 0)
	var held *locks.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("second acquire: %v, %v; want a *locks.HeldError", lock, err)
	}
	host, _ := os.Hostname()
	if held.Holder.Pid != os.Getpid() || held.Holder.Host != host || held.Holder.Command != "backup --full" ||
		held.Holder.FencingToken != uint64(holder.FencingToken()) {
		t.Errorf("holder %+v; want our pid, host, command and token %d", held.Holder, holder.FencingToken())
	}
	if msg := err.Error(); !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(msg, "backup --full") {
		t.Errorf("message %q does not name the holder", msg)
	}
	if keys := contenders(t, s, l, "job"); !slices.Equal(keys, []string{holder.Key}) {
		t.Errorf("queued keys %q; want only the holder's %q", keys, holder.Key)
	}
}

// TestWaitHandOff: a waiter gets the lock as soon as the holder releases,
// with a larger fencing token and holder information stamped when it took
// the lock, not when it queued.
func TestWaitHandOff(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	first := mustAcquire(t, newLocker(s), "job", 0)

	type result struct {
		lock *etcdlock.Lock
		err  error
	}
	got := make(chan result, 1)
	waiter := newLocker(s)
	go func() {
		lock, err := waiter.Acquire(context.Background(), "job", 30*time.Second)
		got <- result{lock, err}
	}()
	waitFor(t, 10*time.Second, "the waiter to queue", func() bool { return len(contenders(t, s, waiter, "job")) == 2 })
	time.Sleep(200 * time.Millisecond) // so a stale created_at would show
	released := time.Now()
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("waiter did not get the lock within 10s of the release")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.lock.Release()
	if r.lock.FencingToken() <= first.FencingToken() {
		t.Errorf("token %d after %d; want it larger", r.lock.FencingToken(), first.FencingToken())
	}
	resp, err := s.Client(t).Get(etcdtest.Ctx(t), r.lock.Key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	var v struct {
		CreatedAt float64 `json:"created_at"`
	}
	json.Unmarshal(resp.Kvs[0].Value, &v)
	if at := time.Unix(0, int64(v.CreatedAt*1e9)); at.Before(released.Add(-50 * time.Millisecond)) {
		t.Errorf("created_at %s is before the hand-off at %s", at, released)
	}
}

// TestWaitRunsOut: a wait that runs out names the holder and dequeues.
func TestWaitRunsOut(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	holder := mustAcquire(t, newLocker(s), "job", 0)
	l := newLocker(s)
	start := time.Now()
	_, err := l.Acquire(context.Background(), "job", 300*time.Millisecond)
	var held *locks.HeldError
	if !errors.As(err, &held) || held.Holder.Pid != os.Getpid() {
		t.Fatalf("acquire: %v; want a *locks.HeldError naming pid %d", err, os.Getpid())
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("gave up after %s; want the full 300ms wait", waited)
	}
	if keys := contenders(t, s, l, "job"); !slices.Equal(keys, []string{holder.Key}) {
		t.Errorf("queued keys %q; want only the holder's", keys)
	}
}

// TestCancelledWait: ctx ending aborts the wait with its cause and dequeues.
func TestCancelledWait(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	holder := mustAcquire(t, newLocker(s), "job", 0)
	l := newLocker(s)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupted by terminated")
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, "job", -1)
		done <- err
	}()
	waitFor(t, 10*time.Second, "the waiter to queue", func() bool { return len(contenders(t, s, l, "job")) == 2 })
	cancel(cause)
	select {
	case err := <-done:
		if !errors.Is(err, cause) {
			t.Fatalf("acquire: %v; want the cancel cause", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelled wait did not end within 5s")
	}
	if keys := contenders(t, s, l, "job"); !slices.Equal(keys, []string{holder.Key}) {
		t.Errorf("queued keys %q; want only the holder's", keys)
	}
}

// TestFencingTokensIncrease: tokens strictly increase across holders, and
// other run ids' activity in between does not break the order.
func TestFencingTokensIncrease(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	a, b := newLocker(s), newLocker(s)
	var last int64
	for i := range 20 {
		l := a
		if i%2 == 1 {
			l = b
		}
		lock := mustAcquire(t, l, "job", 0)
		other := mustAcquire(t, l, "other-"+strconv.Itoa(i), 0)
		if lock.FencingToken() <= last {
			t.Fatalf("round %d: token %d after %d", i, lock.FencingToken(), last)
		}
		last = lock.FencingToken()
		lock.Release()
		other.Release()
	}
}

// TestRunIDsDoNotNest: run "a" and run "a/b" are separate locks.
func TestRunIDsDoNotNest(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	mustAcquire(t, l, "a/b", 0)
	mustAcquire(t, l, "a", 0)
	mustAcquire(t, l, "a%2Fb", 0)
}

// An exclusive waiter waits by watch, its wait line too: while the holder
// stays it sends the cluster no request for 2 s (the wait line's holder
// was read once a second before), OnWait is still called about once a
// second, and the release hands the lock on.
func TestWaiterSendsNothingWhileWaiting(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	holder := mustAcquire(t, newLocker(s), "job", 0)
	w := newLocker(s)
	reports := make(chan *locks.Holder, 100)
	w.OnWait = func(h *locks.Holder, _ time.Duration) { reports <- h }
	got := acquireInBackground(w, "job", time.Minute)
	if h := <-reports; h.Path != holder.Key {
		t.Fatalf("OnWait named %s, want the holder's key %s", h.Path, holder.Key)
	}
	// The wait line starts beside concurrency.Mutex.Lock, whose first
	// reads may come after the first report: count from the second.
	<-reports
	before := etcdtest.Requests(t)
	window := time.After(2 * time.Second)
	n := 0
	for done := false; !done; {
		select {
		case <-reports:
			n++
		case <-window:
			done = true
		}
	}
	if sent := etcdtest.RequestsSince(t, before); len(sent) > 0 {
		t.Errorf("a waiting contender sent %v in 2 s; want none", sent)
	}
	if n == 0 {
		t.Error("OnWait not called during 2 s of waiting")
	}
	holder.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
