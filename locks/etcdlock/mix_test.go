//go:build etcd

package etcdlock_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// countWhileWaiting drains reports for 2 s and returns the unary requests
// the cluster served meanwhile and how many reports came.
func countWhileWaiting(t *testing.T, reports <-chan *locks.Holder) (map[string]int, int) {
	t.Helper()
	before := etcdtest.Requests(t)
	window := time.After(2 * time.Second)
	n := 0
	for {
		select {
		case <-reports:
			n++
		case <-window:
			return etcdtest.RequestsSince(t, before), n
		}
	}
}

// A plain (exclusive) run and --max slots of one run id exclude each other,
// as on the file backend: a plain run beside --max 2 holders is refused
// naming one (wait 0), or waits by watch (no request for 2 s) holding
// RUN_ID's mutex, which keeps a --max newcomer out even from a free slot;
// it gets in once the slot holders have left.
func TestPlainWaitsForMaxSlots(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	var slots [2]*etcdlock.Lock
	for i := range slots {
		lock, _, err := newLocker(s).AcquireSlot(ctx, "b", 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		slots[i] = lock
		defer lock.Release()
	}
	_, err := newLocker(s).Acquire(ctx, "b", 0)
	var he *locks.HeldError
	if !errors.As(err, &he) || (he.Holder.Path != slots[0].Key && he.Holder.Path != slots[1].Key) {
		t.Fatalf("plain beside 2 --max holders, wait 0: %v; want held by a slot holder", err)
	}
	if keys := contenders(t, s, newLocker(s), "b"); len(keys) != 0 {
		t.Fatalf("the refused plain run left %v in the mutex", keys)
	}

	w := newLocker(s)
	reports := make(chan *locks.Holder, 100)
	w.OnWait = func(h *locks.Holder, _ time.Duration) { reports <- h }
	got := make(chan *etcdlock.Lock, 1)
	failed := make(chan error, 1)
	go func() {
		lock, err := w.Acquire(ctx, "b", time.Minute)
		if err != nil {
			failed <- err
			return
		}
		got <- lock
	}()
	if h := <-reports; h.Path != slots[0].Key && h.Path != slots[1].Key {
		t.Fatalf("the plain waiter reported %s, want a slot holder", h.Path)
	}
	sent, n := countWhileWaiting(t, reports)
	if len(sent) > 0 {
		t.Errorf("a plain run waiting for --max holders sent %v in 2 s; want none", sent)
	}
	if n == 0 {
		t.Error("OnWait not called during 2 s of waiting")
	}

	// The plain waiter keeps newcomers out, even from a freed slot.
	if err := slots[0].Release(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the freed slot", func() bool {
		resp, err := s.Client(t).Get(etcdtest.Ctx(t), slots[0].Key)
		return err == nil && len(resp.Kvs) == 0
	})
	_, _, err = newLocker(s).AcquireSlot(ctx, "b", 2, 0)
	if !errors.As(err, &he) || he.Holder.Pid == 0 {
		t.Fatalf("--max 2 with a slot free while a plain run waits: %v; want held by the plain run", err)
	}
	select {
	case <-got:
		t.Fatal("the plain run got in while a slot holder was left")
	case err := <-failed:
		t.Fatal(err)
	default:
	}
	released := time.Now()
	if err := slots[1].Release(); err != nil {
		t.Fatal(err)
	}
	lock := lockWithin(t, got, failed, "the last slot holder leaving (the plain run)")
	t.Logf("plain run in %v after the last slot holder left", time.Since(released))
	lock.Release()
}

// A --max newcomer waits for a plain holder of the run id (wait 0: refused
// naming it), by watch: no request for 2 s; the plain release lets it in.
// The wait ends naming the plain holder when it runs out. A slot's key is
// never created while the plain one holds.
func TestMaxWaitsForPlain(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	ctx := context.Background()
	plain := mustAcquire(t, newLocker(s), "b", 0)
	for _, wait := range []time.Duration{0, 300 * time.Millisecond} {
		_, _, err := newLocker(s).AcquireSlot(ctx, "b", 2, wait)
		var he *locks.HeldError
		if !errors.As(err, &he) || he.Holder.Path != plain.Key {
			t.Fatalf("--max 2 beside a plain holder, wait %v: %v; want held by %s", wait, err, plain.Key)
		}
	}

	// The guard itself, without AcquireSlot's look beforehand (what a
	// newcomer meets when the plain run comes between the look and its
	// key): the slot's key is not created.
	slot0 := locks.SlotRunID("b", locks.ModeMax, 0)
	if _, err := newLocker(s).Acquire(ctx, slot0, 0); !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("slot 0's mutex while a plain run holds b: %v; want refused", err)
	}
	if keys := contenders(t, s, newLocker(s), slot0); len(keys) != 0 {
		t.Fatalf("the refused slot left %v", keys)
	}

	w := newLocker(s)
	reports := make(chan *locks.Holder, 100)
	w.OnWait = func(h *locks.Holder, _ time.Duration) { reports <- h }
	got := make(chan error, 1)
	go func() {
		lock, _, err := w.AcquireSlot(ctx, "b", 2, time.Minute)
		if err == nil {
			lock.Release()
		}
		got <- err
	}()
	if h := <-reports; h.Path != plain.Key {
		t.Fatalf("the --max waiter reported %s, want the plain holder %s", h.Path, plain.Key)
	}
	sent, n := countWhileWaiting(t, reports)
	if len(sent) > 0 {
		t.Errorf("a --max waiter behind a plain holder sent %v in 2 s; want none", sent)
	}
	if n == 0 {
		t.Error("OnWait not called during 2 s of waiting")
	}
	released := time.Now()
	if err := plain.Release(); err != nil {
		t.Fatal(err)
	}
	acquiredWithin(t, got, "the plain release (the --max waiter)")
	t.Logf("--max waiter in %v after the plain release", time.Since(released))
}

// etcdctl lock on RUN_ID's mutex is an exclusive contender to --max
// newcomers: while it holds they wait, and get in when it lets go.
func TestMaxWaitsForEtcdctl(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	ctl, lines := etcdctlLock(t, s, l.MutexName("b"))
	key := keyWithin(t, lines, 10*time.Second, "etcdctl got no lock")
	_, _, err := l.AcquireSlot(context.Background(), "b", 2, 0)
	var other *etcdlock.OtherClientError
	if !errors.As(err, &other) || other.Owner.Key != key {
		t.Fatalf("--max 2 while etcdctl holds %s: %v; want an OtherClientError for that key", key, err)
	}
	w := newLocker(s)
	reports := make(chan *locks.Holder, 100)
	w.OnWait = func(h *locks.Holder, _ time.Duration) { reports <- h }
	got := make(chan error, 1)
	go func() {
		lock, _, err := w.AcquireSlot(context.Background(), "b", 2, time.Minute)
		if err == nil {
			lock.Release()
		}
		got <- err
	}()
	if h := <-reports; h.Path != key {
		t.Fatalf("the --max waiter reported %s, want etcdctl's key %s", h.Path, key)
	}
	select {
	case err := <-got:
		t.Fatalf("--max waiter ended while etcdctl holds: %v", err)
	default:
	}
	ctl.Process.Signal(syscall.SIGTERM)
	acquiredWithin(t, got, "etcdctl letting go (the --max waiter)")
}

// --shared is refused by the slot keys themselves, read in the transaction
// that would create its key, not by an earlier look at the recorded size:
// a slot key planted with no size recorded (what a --shared newcomer could
// see between that look and its key, while a --max first holder starts)
// still refuses it, naming the slot holder, and leaves no key behind.
func TestSharedRefusedBySlotKey(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	cl := s.Client(t)
	lease, err := cl.Grant(etcdtest.Ctx(t), 30)
	if err != nil {
		t.Fatal(err)
	}
	slotKey := l.MutexName(locks.SlotRunID("job", locks.ModeMax, 0)) + "/1"
	if _, err := cl.Put(etcdtest.Ctx(t), slotKey, `{"run_id":"job","lock_id":"1","pid":4242,"created_at":1}`, clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	_, err = l.AcquireShared(context.Background(), "job", time.Minute)
	if !errors.Is(err, locks.ErrModeMismatch) || !strings.Contains(err.Error(), "pid 4242") {
		t.Fatalf("--shared beside a planted slot key: %v; want a mode mismatch naming pid 4242", err)
	}
	if keys := contenders(t, s, l, "job"); len(keys) != 0 {
		t.Errorf("the refused shared contender left %v", keys)
	}
	if _, err := cl.Revoke(etcdtest.Ctx(t), lease.ID); err != nil {
		t.Fatal(err)
	}
	mustAcquireShared(t, newLocker(s), "job", 0)
}
