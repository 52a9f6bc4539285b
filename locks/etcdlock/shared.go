//go:build etcd

package etcdlock

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks"
)

// A shared holder (run --shared) queues on the run id's own mutex, as an
// exclusive one does: its key is <prefix><run id>/<lease in hex>, created
// under its lease with the holder information, whose "mode" is "shared".
// The order of create revisions decides, as in the RWMutex of etcd's
// client/v3/experimental/recipes:
//
//   - an exclusive contender (a plain run, or etcdctl lock) holds once it
//     is the oldest key — concurrency.Mutex waits for every older key,
//     shared ones included;
//   - a shared contender holds once no exclusive key older than its own is
//     left, so shared holders queued before any exclusive one run together.
//
// This is the file backend's policy, writer preference: once an exclusive
// contender has queued, every shared newcomer queues behind it, so a stream
// of shared holders cannot starve it, while it waits for the shared holders
// already in. Shared waiters that came before it go first.
//
// A shared waiter watches the mutex's keys for a deletion from the
// revision it last read, and reads the older keys again when one goes: no
// polling. Liveness, loss and release are the exclusive lock's: the lease,
// the watch on its own key, the revoke.

// AcquireShared takes runID shared, waiting up to wait (< 0: forever; 0:
// one attempt). Its errors are Acquire's; a wait that ran out names the
// exclusive holder (or waiter) in the way. While a --max slot of runID is
// held it is refused (locks.ErrModeMismatch, naming both), by a compare in
// the transaction that would create its key, so a --shared and a --max
// first holder cannot both start.
func (l *Locker) AcquireShared(ctx context.Context, runID string, wait time.Duration) (*Lock, error) {
	id := runID
	if failpoint.On(failpoint.BrokenSlots) {
		// Negative control: a mutex of its own, so nobody excludes it.
		id += "\x00broken " + strconv.Itoa(os.Getpid())
	}
	lock, err := l.acquire(ctx, id, wait, acquireKind{shared: true})
	if err != nil {
		return nil, err
	}
	lock.named, lock.env = runID, []string{"WITHLOCK_SHARED=1"}
	return lock, nil
}

// reporter is the OnWait call of a wait behind o (nil: nobody) since start.
func (l *Locker) reporter(o *Owner, start time.Time) func() {
	if l.OnWait == nil || o == nil {
		return func() {}
	}
	h := holderOf(o)
	return func() { l.OnWait(&h, time.Since(start)) }
}

// holderOf is what an error can say about o: its holder information, or
// its key when it has none.
func holderOf(o *Owner) locks.Holder {
	if o.Holder != nil {
		return *o.Holder
	}
	return locks.Holder{Path: o.Key}
}

// blocker is who is in the way of the contender, nil when none is (then
// the lock is ours): for an exclusive contender the oldest key queued
// before its own, as concurrency.Mutex waits for every older key, and then
// the oldest --max slot holder of the run id; for a shared one the oldest
// exclusive key queued before its own.
func (c *contender) blocker() *Owner {
	for _, kv := range c.older {
		if o := ownerFromKV(c.runID, kv); !c.shared || !o.Shared {
			return o
		}
	}
	if len(c.slotKeys) > 0 {
		return c.l.slotOwnerFromKV(c.slotKeys[0])
	}
	return nil
}

// awaitTurn waits until nobody is in the way (blocker), the wait (from
// start; 0: do not wait) runs out (the error names the one in the way),
// ctx ends, or the lease is lost. enqueue has read the keys in the way.
// Between two looks it watches the run id's keys (its mutex's, and its
// slots' for an exclusive contender) for a deletion from the revision the
// last look read at: no polling, a pause only when the cluster ends the
// watch.
func (c *contender) awaitTurn(ctx context.Context, start time.Time, wait time.Duration) error {
	prefix := c.l.queuePrefix(c.runID)
	if c.slots != "" {
		// Both ranges: the mutex name is a prefix of the slots' range too
		// (other run ids under it only wake us for nothing).
		prefix = c.l.MutexName(c.runID)
	}
	wctx, cancel := context.WithCancel(ctx)
	if wait > 0 {
		wctx, cancel = context.WithDeadline(ctx, start.Add(wait))
	}
	defer cancel()
	defer context.AfterFunc(c.lease.lost, cancel)()
	rev := c.enqueuedRev
	pause := 100 * time.Millisecond
	for {
		b := c.blocker()
		if b == nil {
			return nil
		}
		if wait == 0 {
			return heldError(c.runID, b, time.Now())
		}
		awaitDelete(wctx, c.cl, prefix, rev+1, c.l.reporter(b, start), &pause)
		switch {
		case c.lease.lost.Err() != nil:
			return fmt.Errorf("while waiting: %w", context.Cause(c.lease.lost))
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case wctx.Err() != nil:
			return heldError(c.runID, b, time.Now())
		}
		// A read cut short by the wait's end (or the lease's loss) is no
		// error: the next turn reports that.
		switch r, err := c.readOlder(wctx); {
		case err == nil:
			rev = r
		case wctx.Err() == nil:
			return err
		}
	}
}

// readOlder reads the keys in the way again (queued before ours, oldest
// first; and the slots' keys) and returns the revision read at.
func (c *contender) readOlder(ctx context.Context) (int64, error) {
	rctx, cancel := c.l.rpc(ctx)
	defer cancel()
	resp, err := c.cl.Txn(rctx).Then(c.reads(clientv3.WithMaxCreateRev(c.token - 1))...).Commit()
	if err != nil {
		return 0, err
	}
	c.setOlder(resp.Responses)
	return resp.Header.Revision, nil
}

// reads are the reads of the keys in the way, as setOlder takes them: the
// mutex's keys, oldest first (opts narrow that range), and, for an
// exclusive contender (slots), the slots' keys.
func (c *contender) reads(opts ...clientv3.OpOption) []clientv3.Op {
	ops := []clientv3.Op{clientv3.OpGet(c.l.queuePrefix(c.runID), withQueueOrder(opts...)...)}
	if c.slots != "" {
		ops = append(ops, clientv3.OpGet(c.slots, clientv3.WithFirstCreate()...))
	}
	return ops
}

// setOlder keeps the keys in the way from a read of the mutex's keys
// (oldest first) and, for an exclusive contender, the slots' keys.
func (c *contender) setOlder(resps []*etcdserverpb.ResponseOp) {
	c.older = nil
	for _, kv := range resps[0].GetResponseRange().Kvs {
		if kv.CreateRevision < c.token {
			c.older = append(c.older, kv)
		}
	}
	if c.slots != "" {
		c.slotKeys = resps[1].GetResponseRange().Kvs
	}
}

// withQueueOrder reads a range in queue order: every key under the prefix,
// oldest (lowest create revision) first.
func withQueueOrder(opts ...clientv3.OpOption) []clientv3.OpOption {
	return append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)}, opts...)
}
