//go:build etcd

package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// A --max 2 semaphore in etcd: two holders get slots 0 and 1 with growing
// tokens, a third is refused naming both, a waiter gets the slot a release
// frees, and a holder of another size is refused naming both sizes.
func TestSemaphoreSlots(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	ctx := context.Background()
	a, ka, err := l.AcquireSlot(ctx, "b", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, kb, err := l.AcquireSlot(ctx, "b", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if ka == kb || ka+kb != 1 {
		t.Fatalf("slots %d and %d, want 0 and 1", ka, kb)
	}
	if b.FencingToken() <= a.FencingToken() {
		t.Errorf("tokens %d then %d: want growing across slots", a.FencingToken(), b.FencingToken())
	}
	_, _, err = l.AcquireSlot(ctx, "b", 2, 0)
	var full *locks.SlotsHeldError
	if !errors.As(err, &full) || !errors.Is(err, locks.ErrHeld) || len(full.Holders) != 2 {
		t.Fatalf("third holder: %v, want all 2 slots held", err)
	}
	_, _, err = l.AcquireSlot(ctx, "b", 3, time.Minute)
	if !errors.Is(err, locks.ErrModeMismatch) || !strings.Contains(err.Error(), "--max 3 disagrees with --max 2") {
		t.Fatalf("--max 3 against --max 2: %v", err)
	}

	got := make(chan error, 1)
	waiting := make(chan struct{})
	var once sync.Once
	var slot int
	w := newLocker(s)
	w.OnWait = func(*locks.Holder, time.Duration) { once.Do(func() { close(waiting) }) }
	go func() {
		lock, k, err := w.AcquireSlot(ctx, "b", 2, time.Minute)
		if err == nil {
			slot = k
			lock.Release()
		}
		got <- err
	}()
	<-waiting // the waiter has found both slots held
	released := time.Now()
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if slot != ka {
		t.Errorf("waiter got slot %d, want the freed %d", slot, ka)
	}
	if took := time.Since(released); took > 5*time.Second {
		t.Errorf("waiter got the slot %v after the release; its watch should wake it at once", took)
	}
	b.Release()
	// No holder left: another size takes over.
	c, _, err := l.AcquireSlot(ctx, "b", 3, 0)
	if err != nil {
		t.Fatalf("--max 3 once the --max 2 holders left: %v", err)
	}
	c.Release()
}

// A --max waiter waits by watch: while both slots stay held it sends the
// cluster no request at all for 2 s (a poll, even at the old 2 s cap, makes
// a lease grant, a transaction and a revoke per slot per round), and a
// release wakes it at once.
func TestSemaphoreWaiterWatches(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	ctx := context.Background()
	var locks2 [2]*etcdlock.Lock
	for i := range locks2 {
		lock, _, err := l.AcquireSlot(ctx, "w", 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		locks2[i] = lock
		defer lock.Release()
	}
	w := newLocker(s)
	reports := make(chan struct{}, 100)
	w.OnWait = func(*locks.Holder, time.Duration) { reports <- struct{}{} }
	got := make(chan error, 1)
	go func() {
		lock, _, err := w.AcquireSlot(ctx, "w", 2, time.Minute)
		if err == nil {
			lock.Release()
		}
		got <- err
	}()
	<-reports // the waiter has found both slots held and watches
	before := etcdtest.Requests(t)
	window := time.NewTimer(2 * time.Second)
	nReports := 0
	for done := false; !done; {
		select {
		case <-reports:
			nReports++
		case <-window.C:
			done = true
		}
	}
	if sent := etcdtest.RequestsSince(t, before); len(sent) > 0 {
		t.Errorf("a waiting --max waiter sent %v in 2 s; want none (it polls)", sent)
	}
	if nReports == 0 {
		t.Error("OnWait was not called during 2 s of waiting; want about once a second")
	}
	released := time.Now()
	if err := locks2[0].Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	t.Logf("slot handed on %v after the release", time.Since(released))
}
