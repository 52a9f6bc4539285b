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
		t.Errorf("waiter got the slot %v after the release; the poll is at most 2 s ± 25 %%", took)
	}
	b.Release()
	// No holder left: another size takes over.
	c, _, err := l.AcquireSlot(ctx, "b", 3, 0)
	if err != nil {
		t.Fatalf("--max 3 once the --max 2 holders left: %v", err)
	}
	c.Release()
}
