//go:build etcd

package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestRevokedLeaseIsLostAtOnce: with a 30 s TTL the next keepalive would
// come 10 s later; the watch on the owner key reports the revoke at once.
func TestRevokedLeaseIsLostAtOnce(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	l.TTL = 30 * time.Second
	lock := mustAcquire(t, l, "job", 0)
	lost, stop := lock.Heartbeat()
	defer stop()

	if _, err := s.Client(t).Revoke(etcdtest.Ctx(t), lock.Lease); err != nil {
		t.Fatal(err)
	}
	err, took := lostWithin(t, lost, 3*time.Second)
	t.Logf("revoke reported after %s: %v", took, err)
	if !strings.Contains(err.Error(), lock.Key) {
		t.Errorf("loss %q does not name the key", err)
	}
	stop()
	if err := lock.Release(); err != nil {
		t.Errorf("release after the revoke: %v; want nil (nothing left to release)", err)
	}
	checkNoLockGoroutines(t)
}

// TestServerStoppedIsLostWithinTTL: when the cluster goes away the lock is
// presumed lost once keepalive answers have been missing for the TTL minus
// the safety margin — before the server could give it to someone else —
// and release then gives up within its bound.
func TestServerStoppedIsLostWithinTTL(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	l.TTL = 2 * time.Second
	lock := mustAcquire(t, l, "job", 0)
	lost, stop := lock.Heartbeat()
	defer stop()

	s.Stop()
	err, took := lostWithin(t, lost, lock.TTL+time.Second)
	t.Logf("stopped server reported after %s (TTL %s): %v", took, lock.TTL, err)
	stop()
	start := time.Now()
	if err := lock.Release(); !errors.Is(err, locks.ErrLost) {
		t.Errorf("release with the server gone: %v; want an error matching ErrLost (the loss was reported)", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("release of the lost lock took %s with the server gone; want it bounded (about 0.5s)", took)
	}
	checkNoLockGoroutines(t)
}

// TestSilentLeaseLostAGraceBeforeExpiry: when keepalive answers stop (a
// partition: the member runs on and expires the lease on its own clock) the
// loss is reported at least the grace before the lease expires on the
// member, so a holder that then takes the grace to stop its command is done
// before another host can get the lock.
func TestSilentLeaseLostAGraceBeforeExpiry(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	member := s.DirectClient(t)
	l := newLocker(s)
	l.TTL = 6 * time.Second
	l.Grace = 2 * time.Second
	lock := mustAcquire(t, l, "job", 0)
	lost, stop := lock.Heartbeat()
	defer stop()

	s.Partition()
	lostWithin(t, lost, lock.TTL)
	lostAt := time.Now()
	waitFor(t, 2*lock.TTL, "the lease to expire on the member", func() bool {
		resp, err := member.TimeToLive(etcdtest.Ctx(t), lock.Lease)
		return err == nil && resp.TTL == -1
	})
	room := time.Since(lostAt)
	t.Logf("loss reported %s before the lease expired on the member (TTL %s, grace %s)", room, lock.TTL, l.Grace)
	if room < l.Grace {
		t.Errorf("loss reported only %s before the lease expired; want at least the %s grace", room, l.Grace)
	}
}

// TestReleaseStopsHeartbeat: a release whose heartbeat was not stopped
// first ends it, rather than leaving its watchers on a closed client.
func TestReleaseStopsHeartbeat(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	lock := mustAcquire(t, newLocker(s), "job", 0)
	lost, _ := lock.Heartbeat()
	if err := lock.Release(); err != nil {
		t.Fatalf("release: %v", err)
	}
	checkNoLockGoroutines(t)
	select {
	case err := <-lost:
		t.Errorf("a released lock reported loss: %v", err)
	default:
	}
}

// TestBreakRevokesTheOwner: Break names the holder, revokes its lease (the
// holder learns at once), lets the next waiter in, and reports ErrNotHeld
// when there is nothing to break.
func TestBreakRevokesTheOwner(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	l.TTL = 30 * time.Second
	lock := mustAcquire(t, l, "job", 0)
	lost, stop := lock.Heartbeat()
	defer stop()

	broke, err := newLocker(s).Break(context.Background(), "job")
	if err != nil {
		t.Fatal(err)
	}
	if len(broke) != 1 {
		t.Fatalf("broke %d holders, want 1", len(broke))
	}
	if o := broke[0]; o.Key != lock.Key || o.Holder == nil || o.Holder.Command != "backup --full" {
		t.Errorf("broke %+v; want the holder's key %s with its information", o, lock.Key)
	}
	lostWithin(t, lost, 3*time.Second)
	mustAcquire(t, newLocker(s), "job", 0)
	if _, err := newLocker(s).Break(context.Background(), "free"); !errors.Is(err, etcdlock.ErrNotHeld) {
		t.Errorf("break of a free run id: %v; want ErrNotHeld", err)
	}
}

// TestStatusListsHolders: one entry per held run id, with its holder, its
// waiters and what is left of its lease.
func TestStatusListsHolders(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	holder := mustAcquire(t, l, "b-job", 0)
	mustAcquire(t, newLocker(s), "a/job", 0)
	for range 2 {
		w := newLocker(s)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); w.Acquire(ctx, "b-job", -1) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	waitFor(t, 10*time.Second, "two waiters", func() bool { return len(contenders(t, s, l, "b-job")) == 3 })

	owners, err := l.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(owners) != 2 || owners[0].RunID != "a/job" || owners[1].RunID != "b-job" {
		t.Fatalf("status %+v; want a/job and b-job", owners)
	}
	b := owners[1]
	if b.Key != holder.Key || b.FencingToken != holder.FencingToken() || b.Waiters != 2 || b.Holder == nil ||
		b.TTL <= 0 || b.TTL > 5*time.Second {
		t.Errorf("b-job %+v; want key %s, token %d, 2 waiters, holder info, TTL in (0,5s]", b, holder.Key, holder.FencingToken())
	}
}

// TestWaitReportsHolder: OnWait is called while waiting (about once a
// second), with the holder. The wait is long and ends once a report came,
// so a slow start of the wait on a loaded machine does not starve it.
func TestWaitReportsHolder(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	mustAcquire(t, newLocker(s), "job", 0)
	l := newLocker(s)
	reports := make(chan int, 10)
	l.OnWait = func(h *locks.Holder, waited time.Duration) {
		select {
		case reports <- h.Pid:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, "job", time.Minute)
		done <- err
	}()
	select {
	case pid := <-reports:
		if pid == 0 {
			t.Error("OnWait got a holder without a pid")
		}
	case err := <-done:
		t.Fatalf("acquire of a held lock returned before any OnWait: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("OnWait never called during 30s of waiting")
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("acquire of a held lock succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acquire did not end within 10s of its context's cancel")
	}
}

// TestReleaseBoundedWhenServerGone: a release that cannot reach etcd gives
// up within its bound and says so (the lease's TTL frees the lock).
func TestReleaseBoundedWhenServerGone(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	lock := mustAcquire(t, newLocker(s), "job", 0)
	s.Stop()
	start := time.Now()
	err := lock.Release()
	took := time.Since(start)
	if err == nil || errors.Is(err, locks.ErrLost) || !strings.Contains(err.Error(), "revoke lease") {
		t.Errorf("release with the server gone: %v; want a revoke error (not ErrLost: no loss was reported)", err)
	}
	if took > 4*time.Second {
		t.Errorf("release took %s; want it bounded (about 2s)", took)
	}
	checkNoLockGoroutines(t)
}
