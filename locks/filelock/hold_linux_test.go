package filelock

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks"
)

// holdFree reports whether a new open file description of the fence file
// of runID can take the hold at once.
func holdFree(t *testing.T, r *RunLocker, runID string) bool {
	t.Helper()
	f, err := os.OpenFile(r.files(runID).fence, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return err == nil
}

// takeHoldElsewhere takes the hold of runID on a file of its own, as a
// stopped process that kept it would, until the test ends.
func takeHoldElsewhere(t *testing.T, r *RunLocker, runID string) {
	t.Helper()
	f, err := os.OpenFile(r.files(runID).fence, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
}

// heldWithWaiter holds "job" in a fresh directory and returns that lock
// and a second locker of the directory, whose queued waits poll every poll.
func heldWithWaiter(t *testing.T, poll time.Duration) (*Lock, *RunLocker) {
	t.Helper()
	dir := t.TempDir()
	l := mustAcquire(t, newTestLocker(t, dir, time.Hour), "job")
	w := newTestLocker(t, dir, time.Hour)
	knobsOf(w).holdPoll = poll
	return l, w
}

// waits counts, per way of waiting, the waits r goes into.
type waits struct{ queued, watching atomic.Int64 }

func countWaits(r *RunLocker) *waits {
	w := &waits{}
	knobsOf(r).hook = func(point string) {
		switch point {
		case "wait:queued":
			w.queued.Add(1)
		case "wait:watching":
			w.watching.Add(1)
		}
	}
	return w
}

// acquireInGoroutine starts r.Acquire for runID and returns where its
// result will arrive.
func acquireInGoroutine(r *RunLocker, runID string, wait time.Duration) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := r.Acquire(context.Background(), runID, wait)
		ch <- acquired{l, err}
	}()
	return ch
}

// handOver releases l and returns the lock its queued waiter, got, is
// granted.
func handOver(t *testing.T, l *Lock, got <-chan acquired, waiter string) *Lock {
	t.Helper()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	a := await(t, got, waiter)
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.l
}

type acquired struct {
	l   *Lock
	err error
}

func await(t *testing.T, ch <-chan acquired, what string) acquired {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return acquired{}
	}
}

// A holder keeps the hold from before its lock file is written until after
// it is removed, and says so in the payload; a locker that does not take
// the hold says that too.
func TestHolderKeepsTheHoldUntilRelease(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Hour)
	l := mustAcquire(t, r, "job")
	if !readPayload(t, l.Path).Hold {
		t.Fatal("the payload of a holder with the hold says hold false")
	}
	if holdFree(t, r, "job") {
		t.Fatal("the hold is free while its holder holds the lock")
	}
	freeAtRemoval := true
	knobsOf(r).hook = func(point string) {
		if point == "release:verified" { // the file is removed next
			freeAtRemoval = holdFree(t, r, "job")
		}
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	knobsOf(r).hook = nil
	if freeAtRemoval {
		t.Fatal("the hold was let go before the lock file was removed")
	}
	if !holdFree(t, r, "job") {
		t.Fatal("the hold is still taken after the release")
	}

	// Negative control: without the hold, nothing is kept or claimed.
	knobsOf(r).noHold = true
	l = mustAcquire(t, r, "job")
	defer l.Release()
	if readPayload(t, l.Path).Hold {
		t.Fatal("the payload claims a hold its holder never took")
	}
	if !holdFree(t, r, "job") {
		t.Fatal("the hold is taken by a locker told not to take it")
	}
}

// A waiter behind a holder that keeps the hold queues for it instead of
// watching the directory, is woken by the release (its poll is an hour
// off), and takes the hold along with the lock. Its fencing token, bumped
// through the hold's descriptor of the fence file, is the next one and is
// in the fence file for the acquisition after it.
func TestQueuedWaiterWakesOnRelease(t *testing.T) {
	l, w := heldWithWaiter(t, time.Hour)
	counts := countWaits(w)
	got := acquireInGoroutine(w, "job", time.Minute)
	awaitQueuedFlock(t, w.files("job").fence)
	next := handOver(t, l, got, "the queued waiter")
	defer next.Release()
	if q, n := counts.queued.Load(), counts.watching.Load(); q != 1 || n != 0 {
		t.Fatalf("waits: %d queued, %d watching; want 1 queued, none watching", q, n)
	}
	if !readPayload(t, next.Path).Hold || holdFree(t, w, "job") {
		t.Fatal("the waiter took the lock without the hold it was granted")
	}
	if next.FencingToken() <= l.FencingToken() {
		t.Fatalf("the waiter's token %d is not above its holder's %d", next.FencingToken(), l.FencingToken())
	}
	stored, err := os.ReadFile(w.files("job").fence)
	if err != nil {
		t.Fatal(err)
	}
	if want := counterText(next.FencingToken()); string(stored) != string(want[:]) {
		t.Fatalf("fence file holds %q after the hand-off; want the waiter's token %q", stored, want[:])
	}
}

// The point of the hold: with waiters queued behind a holder, each release
// wakes only the waiter that takes the lock next, so every waiter waits
// once. Each new holder keeps the lock until the others have settled: with
// the hold, until all of them are queued in the kernel again; watching the
// directory (the control), until each of them has woken and gone back to
// waiting, which must happen on every release: n + n(n-1)/2 waits.
func TestOneReleaseWakesOneWaiter(t *testing.T) {
	const n = 5
	run := func(t *testing.T, noHold bool) int64 {
		dir := t.TempDir()
		holder := newTestLocker(t, dir, time.Hour)
		first := mustAcquire(t, holder, "job")
		fence := holder.files("job").fence
		var all []*waits
		total := func() (sum int64) {
			for _, c := range all {
				sum += c.queued.Load() + c.watching.Load()
			}
			return sum
		}
		got := make(chan acquired, n)
		for range n {
			w := newTestLocker(t, dir, time.Hour)
			knobsOf(w).noHold, knobsOf(w).holdPoll = noHold, time.Hour
			c := countWaits(w)
			isWaiting := waiting(w)
			all = append(all, c)
			go func() {
				l, err := w.Acquire(context.Background(), "job", time.Minute)
				got <- acquired{l, err}
			}()
			waitClosed(t, isWaiting, "a waiter to wait")
		}
		next := first
		for i := range n {
			before := total()
			if err := next.Release(); err != nil {
				t.Fatal(err)
			}
			a := await(t, got, "a hand-off")
			if a.err != nil {
				t.Fatal(a.err)
			}
			next = a.l
			left := n - 1 - i
			if noHold {
				testwait.For(t, 10*time.Second, "every other waiter to wake and wait again", func() bool {
					return total() >= before+int64(left)
				})
			} else {
				testwait.For(t, 10*time.Second, "the other waiters to be queued in the kernel", func() bool {
					return blockedFlocks(t, fence) == left
				})
			}
		}
		if err := next.Release(); err != nil {
			t.Fatal(err)
		}
		return total()
	}
	got := run(t, false)
	t.Logf("with the hold: %d waits for %d waiters", got, n)
	if got != n {
		t.Errorf("with the hold: %d waits for %d waiters, want one each", got, n)
	}
	got = run(t, true)
	t.Logf("watching the directory: %d waits for %d waiters", got, n)
	if want := int64(n + n*(n-1)/2); got < want {
		t.Errorf("watching the directory: %d waits, want at least %d", got, want)
	}
}

// When the hold is kept elsewhere (a stopped process, or the waiter next in
// line), a new holder cannot take it and says so; its waiters then watch
// the directory and still wake at once on the release.
func TestHolderWithoutTheHoldIsWatched(t *testing.T) {
	dir := t.TempDir()
	holder := newTestLocker(t, dir, time.Hour)
	// The fence file exists once the run id was locked before.
	l := mustAcquire(t, holder, "job")
	l.Release()
	takeHoldElsewhere(t, holder, "job")
	l = mustAcquire(t, holder, "job")
	if readPayload(t, l.Path).Hold {
		t.Fatal("a holder that could not take the hold claims it")
	}
	w := newTestLocker(t, dir, time.Hour)
	knobsOf(w).holdPoll = time.Hour
	counts := countWaits(w)
	isWaiting := waiting(w)
	got := acquireInGoroutine(w, "job", time.Minute)
	waitClosed(t, isWaiting, "the waiter to wait")
	released := time.Now()
	l.Release()
	a := await(t, got, "the watching waiter")
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.l.Release()
	if d := time.Since(released); d > eventWake {
		t.Fatalf("the waiter took %v after the release: woken by its poll, not by inotify", d)
	}
	if q := counts.queued.Load(); q != 0 {
		t.Fatalf("%d waits queued for a hold the holder does not have", q)
	}
}

// A queued waiter is not woken when the lock file is removed by hand while
// its holder runs (the holder keeps the hold): its poll sees the free path,
// long before its wait ends. With the poll an hour off (the control), the
// removal goes unseen until the last attempt, when the wait ends.
func TestQueuedWaiterPollSeesAHandRemovedLock(t *testing.T) {
	for _, tc := range []struct {
		poll, wait time.Duration
		byPoll     bool
	}{{50 * time.Millisecond, 20 * time.Second, true}, {time.Hour, time.Second, false}} {
		l, w := heldWithWaiter(t, tc.poll)
		started := time.Now()
		got := acquireInGoroutine(w, "job", tc.wait)
		awaitQueuedFlock(t, w.files("job").fence)
		if err := os.Remove(l.Path); err != nil {
			t.Fatal(err)
		}
		a := await(t, got, "the queued waiter")
		took := time.Since(started)
		if a.err != nil {
			t.Fatalf("poll %v: %v", tc.poll, a.err)
		}
		if readPayload(t, a.l.Path).Hold {
			t.Fatal("the new holder claims the hold the old one still has")
		}
		a.l.Release()
		l.Release()
		if tc.byPoll && took >= tc.wait {
			t.Fatalf("poll %v: the lock was taken only at the end of the %v wait", tc.poll, tc.wait)
		}
		if !tc.byPoll && took < tc.wait {
			t.Fatalf("poll %v: the lock was taken after %v, before the wait ended: something else woke the queued waiter", tc.poll, took)
		}
	}
}

// A waiter that gives up while queued cannot withdraw its flock; the
// kernel grants it later, and it is let go at once for the next in line.
// Nothing is left behind: no goroutine, and the hold is free.
func TestAbandonedRequestPassesTheHoldOn(t *testing.T) {
	l, w := heldWithWaiter(t, time.Hour)
	counts := countWaits(w)
	_, err := w.Acquire(context.Background(), "job", 100*time.Millisecond)
	if !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("err = %v, want ErrHeld", err)
	}
	if counts.queued.Load() == 0 {
		t.Fatal("the waiter never queued for the hold")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the abandoned request to let the hold go", func() bool { return holdFree(t, w, "job") })
	goleak.VerifyNone(t)
}
