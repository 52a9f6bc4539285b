//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

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
	if len(l.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no etcd endpoints", locks.ErrUnavailable)
	}
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
	after, fits := lostAfter(lock.TTL, l.Grace)
	if fits {
		return
	}
	l.Log.Warn().Str("run_id", lock.RunID).
		Msgf("grace %s does not fit in the lease TTL %s: if etcd stops answering, a command that ignores TERM may run up to %s past the lease (a TTL of %s or more leaves room)",
			l.Grace, lock.TTL, after+l.Grace-lock.TTL, roomyTTL(l.Grace))
}

// roomyTTL is the smallest whole-second TTL in which grace fits.
func roomyTTL(grace time.Duration) time.Duration {
	ttl := time.Second
	for _, fits := lostAfter(ttl, grace); !fits; _, fits = lostAfter(ttl, grace) {
		ttl += time.Second
	}
	return ttl
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
	shared := kind.shared
	cl, err := l.newClient()
	if err != nil {
		return nil, err
	}
	s, ttl, granted, err := l.session(ctx, cl)
	if err != nil {
		cl.Close()
		return nil, err
	}
	lw, err := watchLease(cl, s, ttl, granted, l.Grace)
	if err != nil {
		s.Orphan()
		revokeBounded(cl, s.Lease())
		cl.Close()
		return nil, err
	}
	defer func() {
		if err != nil {
			lw.stop()
			s.Orphan()
			revokeBounded(cl, s.Lease())
			cl.Close()
		}
	}()
	c := contender{l: l, cl: cl, s: s, lease: lw, runID: runID, shared: shared}
	c.guard, c.slots, c.sizeKey = l.mixRule(runID, shared) // semaphore.go
	c.size = strconv.Itoa(kind.max)
	if kind.max == 0 {
		c.sizeKey = "" // a slot's mutex taken by its own name (tests): no size to keep
	}
	owner, err := c.enqueue(ctx)
	switch {
	case err != nil:
		return nil, err
	case shared:
		err = c.lockShared(ctx, start, wait) // shared.go
	case owner.Key == c.key:
		// Ours at once: one write in all.
	case wait == 0:
		// Held: like TryLock, leave the queue (the deferred revoke deletes
		// the key with the lease) and name the holder.
		err = heldError(runID, owner, time.Now())
	default:
		err = c.lock(ctx, start, wait)
	}
	if err == nil && c.slots != "" {
		// An exclusive holder: with our key in RUN_ID's mutex no new --max
		// slot is taken; wait for the slot holders already in.
		err = c.awaitNoSlots(ctx, start, wait) // semaphore.go
	}
	if err != nil {
		return nil, err
	}
	return c.held(ttl), nil
}

// contender is one session's place in a run id's queue.
type contender struct {
	l     *Locker
	cl    *clientv3.Client
	s     *concurrency.Session
	lease *leaseWatch
	runID string
	// shared: a shared holder, which waits only for the exclusive keys
	// older than its own (shared.go).
	shared bool

	key         string // <mutex name>/<lease in hex>, as concurrency.Mutex names it
	token       int64  // the key's create revision
	acquiredRev int64  // the cluster's revision when the lock was ours
	queuedAt    time.Time
	older       []*mvccpb.KeyValue // shared: the keys queued before ours, oldest first

	// guard (a --max slot): RUN_ID's own mutex, which must have no key
	// when the slot's key is created (semaphore.go, mixRule).
	guard string
	// slots (an exclusive holder of RUN_ID): the range of RUN_ID's --max
	// slots, read with the key's creation; slotHolder is its oldest key
	// then (nil: none), read at slotRev.
	slots      string
	slotHolder *Owner
	slotRev    int64
	// sizeKey (a --max slot): RUN_ID's size key, which must hold size
	// when the slot's key is created.
	sizeKey, size string
}

// rpc bounds one request.
func (l *Locker) rpc(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, l.dialTimeout())
}

// enqueue is the recipe's first step (concurrency.Mutex's tryAcquire) in
// one transaction: create the session's key under the lease, with the
// holder information as its value so the owner key is never seen without
// it, and read the owner — the key with the lowest create revision.
func (c *contender) enqueue(ctx context.Context) (*Owner, error) {
	pfx := c.l.MutexName(c.runID) + "/"
	c.key = fmt.Sprintf("%s%x", pfx, c.s.Lease())
	getOwner := clientv3.OpGet(pfx, clientv3.WithFirstCreate()...)
	if c.shared {
		// Every key: the exclusive ones queued before ours are in the way.
		getOwner = clientv3.OpGet(pfx, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	}
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(c.key), "=", 0)}
	then := []clientv3.Op{clientv3.OpPut(c.key, c.l.holderValue(c.runID, c.s.Lease(), c.shared), clientv3.WithLease(c.s.Lease())), getOwner}
	els := []clientv3.Op{clientv3.OpGet(c.key), getOwner}
	switch {
	case c.guard != "":
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
			els = append(els, clientv3.OpGet(c.sizeKey))
		}
	case c.slots != "":
		// An exclusive contender: the slot holders at the revision our key
		// appears; from then on no new one gets in.
		read := clientv3.OpGet(c.slots, clientv3.WithFirstCreate()...)
		then, els = append(then, read), append(els, read)
	}
	rctx, cancel := c.l.rpc(ctx)
	defer cancel()
	resp, err := c.cl.Txn(rctx).If(cmps...).Then(then...).Else(els...).Commit()
	if err != nil {
		return nil, err
	}
	if c.guard != "" && !resp.Succeeded {
		if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
			if c.shared {
				return nil, c.l.sharedBesideMax(c.runID, kvs[0], resp.Responses[3].GetResponseRange().Kvs)
			}
			return nil, &exclusiveFirstError{owner: ownerFromKV(c.runID, kvs[0]), rev: resp.Header.Revision}
		}
		if c.sizeKey != "" {
			if kvs := resp.Responses[3].GetResponseRange().Kvs; len(kvs) == 0 || string(kvs[0].Value) != c.size {
				return nil, errSizeChanged
			}
		}
	}
	if c.slots != "" {
		c.slotRev = resp.Header.Revision
		if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) > 0 {
			c.slotHolder = c.l.slotOwnerFromKV(kvs[0])
		}
	}
	c.token = resp.Header.Revision
	if !resp.Succeeded {
		c.token = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	c.acquiredRev = resp.Header.Revision
	c.queuedAt = time.Now()
	owners := resp.Responses[1].GetResponseRange().Kvs
	if len(owners) == 0 { // cannot be: our key is there
		return nil, fmt.Errorf("no owner under %s after creating %s", pfx, c.key)
	}
	for _, kv := range owners {
		if c.shared && kv.CreateRevision < c.token {
			c.older = append(c.older, kv)
		}
	}
	return ownerFromKV(c.runID, owners[0]), nil
}

// lock waits in the queue (concurrency.Mutex.Lock, which finds the key
// enqueue made) until the lock is ours, the wait runs out (the holder is
// named), ctx ends, or the lease is lost.
func (c *contender) lock(ctx context.Context, start time.Time, wait time.Duration) error {
	wctx, cancel := context.WithCancel(ctx)
	if wait > 0 {
		wctx, cancel = context.WithDeadline(ctx, start.Add(wait))
	}
	defer cancel()
	m := concurrency.NewMutex(c.s, c.l.MutexName(c.runID))
	result := make(chan error, 1)
	go func() { result <- m.Lock(wctx) }()
	stopReports := c.reportWaiting(wctx, start)
	defer stopReports()
	var err error
	select {
	case err = <-result:
	case <-wctx.Done():
		err = c.awaitLock(result)
	case <-c.lease.lost:
		cancel()
		c.awaitLock(result)
		return fmt.Errorf("while waiting: %w", c.lease.err)
	}
	if err == nil {
		if m.Key() != c.key {
			// concurrency.Mutex names its key differently from enqueue: the
			// holder information and the fencing token would be wrong.
			return fmt.Errorf("mutex key %q is not the enqueued key %q", m.Key(), c.key)
		}
		c.acquiredRev = m.Header().Revision
		c.restamp(ctx)
		return nil
	}
	if ctx.Err() != nil || wctx.Err() == nil {
		return err
	}
	// The wait ran out: name the holder.
	rctx, rcancel := c.l.rpc(ctx)
	defer rcancel()
	o, oerr := c.l.owner(rctx, c.cl, c.runID)
	if oerr != nil {
		return oerr
	}
	return heldError(c.runID, o, time.Now())
}

// awaitLock waits for an abandoned Mutex.Lock to return. Its cleanup
// deletes our key with the client's own context, which blocks while the
// cluster is unreachable: past releaseBound the client is closed under it
// (the lease's TTL removes the key anyway).
func (c *contender) awaitLock(result <-chan error) error {
	t := time.NewTimer(releaseBound)
	defer t.Stop()
	select {
	case err := <-result:
		return err
	case <-t.C:
		c.cl.Close()
		return <-result
	}
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
		Then(clientv3.OpPut(c.key, c.l.holderValue(c.runID, c.s.Lease(), c.shared), clientv3.WithLease(c.s.Lease()))).
		Commit()
	if err != nil {
		c.l.Log.Debug().Err(err).Str("run_id", c.runID).Msg("holder information not updated after the wait")
	}
}

// reportWaiting calls OnWait at once and then about once a second with
// the current owner until the returned stop is called. It reads the owner
// again only when a key of the mutex is deleted (a watch), so a long wait
// costs the cluster nothing.
func (c *contender) reportWaiting(ctx context.Context, start time.Time) (stop func()) {
	if c.l.OnWait == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	pfx := c.l.MutexName(c.runID) + "/"
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			rctx, rcancel := c.l.rpc(ctx)
			resp, err := c.cl.Get(rctx, pfx, clientv3.WithFirstCreate()...)
			rcancel()
			if err != nil {
				if !sleep(ctx, time.Second, 0) {
					return
				}
				continue
			}
			var o *Owner
			if len(resp.Kvs) > 0 && string(resp.Kvs[0].Key) != c.key {
				o = ownerFromKV(c.runID, resp.Kvs[0])
			}
			report := c.l.reporter(o, start)
			if woke, err := awaitDelete(ctx, c.cl, pfx, resp.Header.Revision+1, 0, report); !woke && err != nil {
				// The cluster ended the watch: read again after a pause.
				if !sleep(ctx, time.Second, 0) {
					return
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

// held turns the won contender into a Lock.
func (c *contender) held(ttl time.Duration) *Lock {
	return &Lock{
		RunID:       c.runID,
		Key:         c.key,
		Lease:       c.s.Lease(),
		TTL:         ttl,
		token:       c.token,
		acquiredRev: c.acquiredRev,
		cl:          c.cl,
		s:           c.s,
		lease:       c.lease,
		log:         c.l.Log,
	}
}
