//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
)

// Acquire takes the run lock of runID, waiting up to wait for it (wait < 0:
// forever; 0: one attempt, like concurrency.Mutex.TryLock). Its errors
// match locks.ErrHeld (a *locks.HeldError or *OtherClientError) when the
// wait ran out, and locks.ErrUnavailable when the cluster could not be
// used: unreachable attempts are retried within the wait (at least
// DialTimeout), refused credentials are not. ctx ending aborts with
// context.Cause(ctx).
func (l *Locker) Acquire(ctx context.Context, runID string, wait time.Duration) (*Lock, error) {
	return l.acquire(ctx, runID, wait, acquireKind{})
}

// acquireKind is what an acquisition takes beyond a plain run lock.
type acquireKind struct {
	shared bool // AcquireShared
	max    int  // a --max slot (runID is the slot's derived id): the size it was agreed at
}

// acquire is Acquire, AcquireShared, or one try at a --max slot.
func (l *Locker) acquire(ctx context.Context, runID string, wait time.Duration, kind acquireKind) (*Lock, error) {
	start := time.Now()
	var giveUp time.Time // zero: never
	if wait >= 0 {
		giveUp = start.Add(max(wait, l.dialTimeout()))
	}
	pause := 100 * time.Millisecond
	for {
		lock, err := l.attempt(ctx, runID, start, wait, kind)
		switch {
		case err == nil:
			l.warnIfGraceTooLong(lock)
			return lock, nil
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case errors.Is(err, locks.ErrHeld), errors.Is(err, locks.ErrModeMismatch):
			return nil, err
		case permanent(err):
			return nil, l.unavailable(err)
		}
		left := time.Until(giveUp)
		if !giveUp.IsZero() && left <= 0 {
			return nil, l.unavailable(err)
		}
		l.Log.Info().Err(l.describe(err)).Str("run_id", runID).Msg("etcd attempt failed; retrying")
		if !sleep(ctx, pause, left) {
			return nil, context.Cause(ctx)
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// warnIfGraceTooLong says when the grace does not fit in the lease: a
// command that ignores TERM may then run on after the server could have
// given the lock to another host.
func (l *Locker) warnIfGraceTooLong(lock *Lock) {
	if after, fits := lostAfter(lock.TTL, l.Grace); !fits {
		l.Log.Warn().Str("run_id", lock.RunID).
			Msgf("grace %s does not fit in the lease TTL %s: if etcd stops answering, a command that ignores TERM may run up to %s past the lease (a longer --ttl leaves room)",
				l.Grace, lock.TTL, after+l.Grace-lock.TTL)
	}
}

// sleep waits for d (at most left when left > 0); false when ctx ended.
func sleep(ctx context.Context, d, left time.Duration) bool {
	if left > 0 {
		d = min(d, left)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// attempt is one try with a fresh client: lease, enqueue, lock. Whatever
// it set up is torn down when it fails.
func (l *Locker) attempt(ctx context.Context, runID string, start time.Time, wait time.Duration, kind acquireKind) (lock *Lock, err error) {
	cl, err := l.newClient()
	if err != nil {
		return nil, err
	}
	ls, err := l.grantLease(ctx, cl)
	if err != nil {
		cl.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			ls.stop()
			revokeBounded(cl, ls.id)
			cl.Close()
		}
	}()
	c := contender{l: l, cl: cl, lease: ls, runID: runID, shared: kind.shared}
	c.guard, c.slots, c.sizeKey = l.mixRule(runID, kind.shared) // semaphore.go
	c.size = strconv.Itoa(kind.max)
	if kind.max == 0 {
		c.sizeKey = "" // a slot's mutex taken by its own name (tests): no size to keep
	}
	if err := c.enqueue(ctx); err != nil {
		return nil, err
	}
	// Held by someone else and no wait: like TryLock, leave the queue (the
	// deferred revoke deletes the key with the lease) and name the holder.
	if err := c.awaitTurn(ctx, start, wait); err != nil {
		return nil, err
	}
	c.restamp(ctx)
	return &Lock{RunID: c.runID, Key: c.key, Lease: c.lease.id, TTL: c.lease.ttl, contender: &c}, nil
}

// contender is one lease's place in a run id's queue.
type contender struct {
	l     *Locker
	cl    *clientv3.Client
	lease *lease
	runID string
	// shared: a shared holder, which waits only for the exclusive keys
	// older than its own (shared.go).
	shared bool

	key   string // <mutex name>/<lease in hex>, as concurrency.Mutex names it
	token int64  // the key's create revision
	// enqueuedRev is the cluster's revision when the key was created (or
	// found): the holder's watch on its key starts after it, so a deletion
	// while it waited is seen too.
	enqueuedRev int64
	queuedAt    time.Time
	older       []*mvccpb.KeyValue // the keys queued before ours, oldest first

	// guard (a --max slot): RUN_ID's own mutex, which must have no key
	// when the slot's key is created (semaphore.go, mixRule).
	guard string
	// slots (an exclusive holder of RUN_ID): the range of RUN_ID's --max
	// slots, read with the key's creation and with every look at the
	// queue; slotKeys is what it held then, oldest first. With our key in
	// RUN_ID's mutex no new slot is taken: we wait for these to go too.
	slots    string
	slotKeys []*mvccpb.KeyValue
	// sizeKey (a --max slot): RUN_ID's size key, which must hold size
	// when the slot's key is created.
	sizeKey, size string
}

// rpc bounds one request.
func (l *Locker) rpc(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.dialTimeout())
}

// enqueue is the recipe's first step (concurrency.Mutex's tryAcquire) in
// one transaction: create the contender's key under its lease, with the
// holder information as its value so the owner key is never seen without
// it, and read the queue — every key by create revision — and, for an
// exclusive contender, the slot holders at the revision our key appears
// (from then on no new one gets in). The lease is fresh, so the key is
// new: its create revision, the fencing token, is the transaction's
// revision.
func (c *contender) enqueue(ctx context.Context) error {
	c.key = c.l.queuePrefix(c.runID) + leaseHex(c.lease.id)
	var cmps []clientv3.Cmp
	then := append([]clientv3.Op{
		clientv3.OpPut(c.key, c.l.holderValue(c.runID, c.lease.id, c.shared), clientv3.WithLease(c.lease.id)),
	}, c.reads()...)
	var els []clientv3.Op
	if c.guard != "" {
		// A --max slot: only while RUN_ID's own mutex has no key (no
		// exclusive holder or waiter); a shared contender: only while no
		// --max slot is held. Checked in the same transaction.
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(c.guard), "=", 0).WithPrefix())
		els = append(els, clientv3.OpGet(c.guard, clientv3.WithFirstCreate()...))
		if c.shared {
			els = append(els, clientv3.OpGet(c.l.maxKey(c.runID)))
		}
		if c.sizeKey != "" {
			// ... and only while the size is still the one agreed.
			cmps = append(cmps, clientv3.Compare(clientv3.Value(c.sizeKey), "=", c.size))
		}
	}
	rctx, cancel := c.l.rpc(ctx)
	defer cancel()
	resp, err := c.cl.Txn(rctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		// The guard has a key, or else the size changed.
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) > 0 {
			if c.shared {
				return c.l.maxMismatch(c.runID, 0, resp.Responses[1].GetResponseRange().Kvs, kvs)
			}
			return errExclusiveFirst
		}
		return errSizeChanged
	}
	c.token = resp.Header.Revision
	c.enqueuedRev = resp.Header.Revision
	c.queuedAt = time.Now()
	c.setOlder(resp.Responses[1:])
	return nil
}

// restamp rewrites the holder information after a wait, so created_at says
// when the lock was taken rather than when we queued. A failure only makes
// status show the queueing time.
func (c *contender) restamp(ctx context.Context) {
	if time.Since(c.queuedAt) < 100*time.Millisecond {
		return
	}
	rctx, cancel := c.l.rpc(ctx)
	defer cancel()
	_, err := c.cl.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(c.key), "=", c.token)).
		Then(clientv3.OpPut(c.key, c.l.holderValue(c.runID, c.lease.id, c.shared), clientv3.WithLease(c.lease.id))).
		Commit()
	if err != nil {
		c.l.Log.Debug().Err(err).Str("run_id", c.runID).Msg("holder information not updated after the wait")
	}
}
