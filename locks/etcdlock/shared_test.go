//go:build etcd

package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// mustAcquireShared takes runID shared or fails the test; released at the
// end of the test.
func mustAcquireShared(t *testing.T, l *etcdlock.Locker, runID string, wait time.Duration) *etcdlock.Lock {
	t.Helper()
	lock, err := l.AcquireShared(context.Background(), runID, wait)
	if err != nil {
		t.Fatalf("acquire %q shared: %v", runID, err)
	}
	t.Cleanup(func() { lock.Release() })
	return lock
}

// acquireSharedInBackground is acquireInBackground for a shared holder: it
// delivers the lock (the caller releases it) or the error.
func acquireSharedInBackground(l *etcdlock.Locker, runID string, wait time.Duration) (<-chan *etcdlock.Lock, <-chan error) {
	held, failed := make(chan *etcdlock.Lock, 1), make(chan error, 1)
	go func() {
		lock, err := l.AcquireShared(context.Background(), runID, wait)
		if err != nil {
			failed <- err
			return
		}
		held <- lock
	}()
	return held, failed
}

// Three shared holders run together with their own growing tokens; an
// exclusive one is refused naming the first of them; status lists all
// three as holders; break revokes all three, and each one's heartbeat
// reports the loss.
func TestSharedHoldersTogether(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	var held []*etcdlock.Lock
	for range 3 {
		held = append(held, mustAcquireShared(t, newLocker(s), "job", 0))
	}
	for i := 1; i < len(held); i++ {
		if held[i].FencingToken() <= held[i-1].FencingToken() {
			t.Errorf("tokens %d then %d: want growing", held[i-1].FencingToken(), held[i].FencingToken())
		}
	}
	_, err := newLocker(s).Acquire(context.Background(), "job", 0)
	var he *locks.HeldError
	if !errors.As(err, &he) || he.Holder.Path != held[0].Key {
		t.Fatalf("exclusive beside 3 shared holders: %v; want held by %s", err, held[0].Key)
	}

	owners, err := newLocker(s).Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(owners) != 3 {
		t.Fatalf("status lists %d holders, want the 3 shared ones: %+v", len(owners), owners)
	}
	for i, o := range owners {
		if !o.Shared || o.Key != held[i].Key || o.Holder == nil || o.Waiters != 0 {
			t.Errorf("status holder %d: %+v; want shared holder %s, no waiters", i, o, held[i].Key)
		}
	}

	var lost []<-chan error
	for _, h := range held {
		ch, stop := h.Heartbeat()
		defer stop()
		lost = append(lost, ch)
	}
	broke, err := newLocker(s).Break(context.Background(), "job")
	if err != nil || len(broke) != 3 {
		t.Fatalf("break: %d broken, %v; want all 3 shared holders", len(broke), err)
	}
	for _, ch := range lost {
		lostWithin(t, ch, 3*time.Second)
	}
}

// Writer preference: an exclusive contender waits for the shared holder
// already in, and from the moment it queues a new shared holder is refused
// (naming it) or waits behind it; it gets the lock when the shared holder
// leaves, and the shared waiter only after it.
func TestSharedExclusiveWaiterNotStarved(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	first := mustAcquireShared(t, newLocker(s), "job", 0)
	ex := newLocker(s)
	ex.Command = "writer"
	exHeld := make(chan *etcdlock.Lock, 1)
	exFailed := make(chan error, 1)
	go func() {
		lock, err := ex.Acquire(context.Background(), "job", time.Minute)
		if err != nil {
			exFailed <- err
			return
		}
		exHeld <- lock
	}()
	waitFor(t, 10*time.Second, "the exclusive contender to queue", func() bool { return len(contenders(t, s, ex, "job")) == 2 })

	_, err := newLocker(s).AcquireShared(context.Background(), "job", 0)
	var he *locks.HeldError
	if !errors.As(err, &he) || he.Holder.Command != "writer" {
		t.Fatalf("shared newcomer behind a queued exclusive one: %v; want held by the writer", err)
	}
	rHeld, rFailed := acquireSharedInBackground(newLocker(s), "job", time.Minute)
	waitFor(t, 10*time.Second, "the shared waiter to queue", func() bool { return len(contenders(t, s, ex, "job")) == 3 })

	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	var exLock *etcdlock.Lock
	select {
	case exLock = <-exHeld:
	case err := <-exFailed:
		t.Fatalf("exclusive contender: %v", err)
	case r := <-rHeld:
		r.Release()
		t.Fatal("the shared waiter got in before the exclusive one queued ahead of it")
	case <-time.After(10 * time.Second):
		t.Fatal("exclusive contender not in within 10 s of the shared holder leaving")
	}
	if exLock.FencingToken() <= first.FencingToken() {
		t.Errorf("exclusive token %d not after the shared holder's %d", exLock.FencingToken(), first.FencingToken())
	}
	select {
	case r := <-rHeld:
		r.Release()
		t.Fatal("a shared holder got in beside the exclusive one")
	case err := <-rFailed:
		t.Fatalf("shared waiter: %v", err)
	default:
	}
	exLock.Release()
	lockWithin(t, rHeld, rFailed, "the exclusive one leaving (the shared waiter)").Release()
}

// A shared waiter waits by watch: while the exclusive holder stays it
// sends the cluster no request for 2 s, and its release wakes it at once.
// Its --wait running out names the exclusive holder.
func TestSharedWaiterWatches(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	ex := mustAcquire(t, newLocker(s), "job", 0)

	_, err := newLocker(s).AcquireShared(context.Background(), "job", 300*time.Millisecond)
	var he *locks.HeldError
	if !errors.As(err, &he) || he.Holder.Path != ex.Key {
		t.Fatalf("shared beside an exclusive holder, wait 300ms: %v; want held by %s", err, ex.Key)
	}

	w := newLocker(s)
	reports := make(chan struct{}, 100)
	w.OnWait = func(*locks.Holder, time.Duration) { reports <- struct{}{} }
	rHeld, rFailed := acquireSharedInBackground(w, "job", time.Minute)
	<-reports // it has read the keys and watches
	before := etcdtest.Requests(t)
	window := time.After(2 * time.Second)
	for done := false; !done; {
		select {
		case <-reports:
		case <-window:
			done = true
		}
	}
	if sent := etcdtest.RequestsSince(t, before); len(sent) > 0 {
		t.Errorf("a waiting shared contender sent %v in 2 s; want none (it polls)", sent)
	}
	released := time.Now()
	if err := ex.Release(); err != nil {
		t.Fatal(err)
	}
	r := lockWithin(t, rHeld, rFailed, "the exclusive release (the shared waiter)")
	t.Logf("shared waiter in %v after the exclusive release", time.Since(released))
	r.Release()
}

// A shared holder whose lease is revoked under it (its process gone, as
// far as etcd can tell) reports the loss, and its key no longer keeps an
// exclusive contender out.
func TestSharedLeaseGoneFreesIt(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	sh := mustAcquireShared(t, newLocker(s), "job", 0)
	lost, stop := sh.Heartbeat()
	defer stop()
	got := acquireInBackground(newLocker(s), "job", time.Minute)
	waitFor(t, 10*time.Second, "the exclusive contender to queue", func() bool { return len(contenders(t, s, newLocker(s), "job")) == 2 })
	if _, err := s.Client(t).Revoke(etcdtest.Ctx(t), sh.Lease); err != nil {
		t.Fatal(err)
	}
	lostWithin(t, lost, 3*time.Second)
	acquiredWithin(t, got, "the shared lease going (the exclusive contender)")
}

// Interop: `etcdctl lock` is an exclusive contender of the same mutex. It
// queues behind withlock's shared holders and gets the lock once they
// leave; while it holds, a shared withlock waits for it.
func TestSharedWithEtcdctl(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	a := mustAcquireShared(t, l, "job", 0)
	b := mustAcquireShared(t, newLocker(s), "job", 0)
	ctl, lines := etcdctlLock(t, s, l.MutexName("job"))
	waitFor(t, 10*time.Second, "etcdctl to queue behind the shared holders", func() bool { return len(contenders(t, s, l, "job")) == 3 })
	a.Release()
	select {
	case k := <-lines:
		t.Fatalf("etcdctl got the lock (%s) while a shared holder holds it", k)
	default:
	}
	b.Release()
	key := keyWithin(t, lines, 10*time.Second, "no lock after the shared holders left")

	_, err := newLocker(s).AcquireShared(context.Background(), "job", 0)
	var other *etcdlock.OtherClientError
	if !errors.As(err, &other) || other.Owner.Key != key {
		t.Fatalf("shared while etcdctl holds %s: %v; want an OtherClientError for that key", key, err)
	}
	rHeld, rFailed := acquireSharedInBackground(newLocker(s), "job", time.Minute)
	waitFor(t, 10*time.Second, "the shared waiter to queue", func() bool { return len(contenders(t, s, l, "job")) == 2 })
	ctl.Process.Signal(syscall.SIGTERM)
	lockWithin(t, rHeld, rFailed, "etcdctl letting go (the shared waiter)").Release()
}

// --shared and --max on one run id disagree, as on the file backend: each
// is refused (ErrModeMismatch, naming both) while the other kind holds,
// and works once it has left.
func TestSharedAgainstMax(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	slot, _, err := newLocker(s).AcquireSlot(ctx, "job", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = newLocker(s).AcquireShared(ctx, "job", time.Minute)
	if !errors.Is(err, locks.ErrModeMismatch) || !strings.Contains(err.Error(), "--shared disagrees with --max 2") {
		t.Fatalf("--shared beside a --max 2 holder: %v", err)
	}
	slot.Release()
	sh := mustAcquireShared(t, newLocker(s), "job", 0)
	_, _, err = newLocker(s).AcquireSlot(ctx, "job", 2, time.Minute)
	if !errors.Is(err, locks.ErrModeMismatch) || !strings.Contains(err.Error(), "--max 2 disagrees with --shared") {
		t.Fatalf("--max 2 beside a shared holder: %v", err)
	}
	sh.Release()
	again, _, err := newLocker(s).AcquireSlot(ctx, "job", 2, 0)
	if err != nil {
		t.Fatalf("--max 2 once the shared holder left: %v", err)
	}
	again.Release()
}
