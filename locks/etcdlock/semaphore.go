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

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks"
)

// A semaphore of max slots (run --max) is max run locks: slot k of runID is
// the mutex of the derived run id locks.SlotRunID(runID, max, k), so each
// slot has the run lock's lease, loss detection and holder information, and
// its fencing token — the owner key's create revision — grows across all
// slots. The size is kept in the key <mutex name of runID>%00max: the
// first holder writes it, and a holder with another size is refused while
// any slot of the recorded size is held.
//
// A waiter reads the slots' keys (one range), tries the free ones, and
// when none is left watches the range for a deletion from the revision it
// read: a slot freed after the read wakes it, one freed before was seen
// free. Waiters are not lined up: each freed slot goes to whichever waiter
// tries first, and the others (woken too) find it taken and watch again.
//
// A plain (exclusive) run of the same run id excludes the slot holders, as
// on the file backend, with the same writer preference:
//
//   - a slot's key is created only while RUN_ID's own mutex has no key
//     (a compare on that range in the creating transaction), so while an
//     exclusive contender holds or queues there no new slot is taken, and
//     a --max waiter watches that mutex until its keys are gone;
//   - an exclusive contender reads the slots' range in the transaction
//     that creates its key, and once it holds RUN_ID's mutex waits (by
//     watch) until the slot holders it saw have left. None can have come
//     after: the compare sees its key.
//
// `etcdctl lock RUN_ID`'s name is an exclusive contender to a --max
// newcomer (its key is in the mutex) but does not wait for slot holders.

func (l *Locker) maxKey(runID string) string { return l.MutexName(runID) + "%00max" }

// slotsPrefix is the range of every slot's keys of runID: the derived run
// ids <runID>\x00max <k>, escaped.
func (l *Locker) slotsPrefix(runID string) string {
	return l.MutexName(runID) + "%00" + string(locks.ModeMax) + " "
}

// AcquireSlot takes one of max slots of runID, waiting up to wait (< 0:
// forever; 0: one round). It returns the slot's lock and number.
func (l *Locker) AcquireSlot(ctx context.Context, runID string, max int, wait time.Duration) (*Lock, int, error) {
	if max < 1 || max > locks.MaxSlots {
		return nil, 0, &locks.InvalidError{What: fmt.Sprintf("--max %d", max), Reason: fmt.Sprintf("must be 1 … %d", locks.MaxSlots)}
	}
	start := time.Now()
	cl, err := l.newClient()
	if err != nil {
		return nil, 0, l.unavailable(err)
	}
	defer cl.Close()
	if err := l.agreeMax(ctx, cl, runID, max); err != nil {
		return nil, 0, err
	}
	// The wait is counted from start; the cluster is read on ctx.
	wctx, cancel := context.WithCancel(ctx)
	if wait > 0 {
		wctx, cancel = context.WithDeadline(ctx, start.Add(wait))
	}
	defer cancel()
	pause := 100 * time.Millisecond
	for {
		owners, first, rev, err := l.slotOwners(ctx, cl, runID, max)
		if err != nil {
			return nil, 0, err
		}
		if failpoint.On(failpoint.BrokenSlots) {
			first = nil // negative control: a plain run does not keep slots out
		}
		if first != nil && first.Shared {
			return nil, 0, locks.MaxMismatch(runID, max, 0, holderOf(first))
		}
		// What we watch, whom OnWait names, and the error if the wait ends.
		watch, blocker := l.slotsPrefix(runID), first
		var timedOut error
		if first != nil {
			// RUN_ID's own mutex has a key (a plain run holds or waits, or
			// etcdctl lock): no slot is taken until it is gone.
			watch = l.queuePrefix(runID)
			timedOut = heldError(runID, first, time.Now())
		} else {
			lock, k, err := l.tryFreeSlots(ctx, runID, owners)
			switch {
			case errors.Is(err, errSizeChanged):
				if err := l.agreeMax(ctx, cl, runID, max); err != nil {
					return nil, 0, err
				}
				continue
			case errors.Is(err, errExclusiveFirst):
				continue // RUN_ID's mutex got a key meanwhile: read again
			case err != nil || lock != nil:
				return lock, k, err
			}
			var held []locks.Holder
			for _, o := range owners {
				held = append(held, holderOf(o))
			}
			blocker = owners[0]
			timedOut = &locks.SlotsHeldError{RunID: runID, Max: max, Holders: held}
		}
		if wait == 0 || wctx.Err() != nil {
			return nil, 0, timedOut
		}
		awaitDelete(wctx, cl, watch, rev+1, l.reporter(blocker, start), &pause)
		if ctx.Err() != nil {
			return nil, 0, context.Cause(ctx)
		}
	}
}

// tryFreeSlots tries each free slot of owners (nil entries) in turn, one
// attempt each. A slot taken by someone else just now gets its owner filled
// in. errExclusiveFirst (RUN_ID's own mutex has a key) and errSizeChanged
// end the tries: the caller reads again.
func (l *Locker) tryFreeSlots(ctx context.Context, runID string, owners []*Owner) (*Lock, int, error) {
	for k, o := range owners {
		if o != nil {
			continue
		}
		lock, err := l.acquire(ctx, locks.SlotRunID(runID, locks.ModeMax, k), 0, acquireKind{max: len(owners)})
		switch {
		case err == nil:
			lock.named, lock.slot = runID, &k
			lock.env = []string{"WITHLOCK_SLOT=" + strconv.Itoa(k), "WITHLOCK_MAX=" + strconv.Itoa(len(owners))}
			return lock, k, nil
		case errors.Is(err, errExclusiveFirst), errors.Is(err, errSizeChanged), !errors.Is(err, locks.ErrHeld):
			return nil, 0, err
		}
		// Taken just now: its owner is named below; our key's deletion
		// wakes the watch once, and the next read sees it held.
		owners[k] = heldOwner(err)
	}
	return nil, 0, nil
}

// mixRule is what a contender for runID checks beyond its own mutex so that
// a plain run and --max slots of one run id exclude each other, and --max
// and --shared never hold together: a guard, a range that must be empty
// when the contender's key is created (for a --max slot RUN_ID's own
// mutex; for a shared contender RUN_ID's slots), or an exclusive
// contender's slots (the range of RUN_ID's slots it waits for). Nobody
// gets either in the negative-control build.
func (l *Locker) mixRule(runID string, shared bool) (guard, slots, sizeKey string) {
	if failpoint.On(failpoint.BrokenSlots) {
		return "", "", ""
	}
	if shared {
		return l.slotsPrefix(runID), "", ""
	}
	if base, mode, _, ok := locks.ParseSlotRunID(runID); ok {
		if mode == locks.ModeMax {
			return l.queuePrefix(base), "", l.maxKey(base)
		}
		return "", "", ""
	}
	return "", l.slotsPrefix(runID), ""
}

// errSizeChanged: a --max slot was not taken because RUN_ID's size key no
// longer holds the size agreed (a --max of another size took it over, once
// no slot was held). AcquireSlot agrees again, which names the other size
// once it has a holder. It matches locks.ErrHeld, so acquire does not retry.
var errSizeChanged = fmt.Errorf("%w: the semaphore's size changed", locks.ErrHeld)

// errExclusiveFirst: a --max slot was not taken because RUN_ID's own
// mutex had a key when its key would have been created. It matches
// locks.ErrHeld; AcquireSlot reads again and waits.
var errExclusiveFirst = fmt.Errorf("%w: the run id's own mutex has a key", locks.ErrHeld)

// slotOwnerFromKV reads a slot's key, whose run id is the derived one.
func (l *Locker) slotOwnerFromKV(kv *mvccpb.KeyValue) *Owner {
	id, _, _ := splitKey(l.prefix(), string(kv.Key))
	return ownerFromKV(id, kv)
}

// heldOwner is the owner an Acquire's ErrHeld names.
func heldOwner(err error) *Owner {
	if he, ok := errors.AsType[*locks.HeldError](err); ok {
		return &Owner{RunID: he.RunID, Key: he.Holder.Path, Holder: &he.Holder, TTL: -1}
	}
	if oe, ok := errors.AsType[*OtherClientError](err); ok && oe.Owner != nil {
		return oe.Owner
	}
	return &Owner{TTL: -1}
}

// slotOwners reads the keys of runID's max slots and the oldest key of
// runID's own mutex in one transaction: the owner of each slot (nil:
// free), the mutex's first key (nil: none), and the revision read at.
func (l *Locker) slotOwners(ctx context.Context, cl *clientv3.Client, runID string, max int) ([]*Owner, *Owner, int64, error) {
	rctx, cancel := l.rpc(ctx)
	defer cancel()
	resp, err := cl.Txn(rctx).Then(
		clientv3.OpGet(l.slotsPrefix(runID), withQueueOrder()...),
		clientv3.OpGet(l.queuePrefix(runID), clientv3.WithFirstCreate()...),
	).Commit()
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, 0, context.Cause(ctx)
		}
		return nil, nil, 0, l.unavailable(err)
	}
	var first *Owner
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		first = ownerFromKV(runID, kvs[0])
	}
	owners := make([]*Owner, max)
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		// A key splitKey refuses has run id "", which is no slot's.
		o := l.slotOwnerFromKV(kv)
		base, mode, k, ok := locks.ParseSlotRunID(o.RunID)
		if !ok || base != runID || mode != locks.ModeMax || k >= max || owners[k] != nil {
			continue
		}
		owners[k] = o // oldest first: the slot's owner
	}
	return owners, first, resp.Header.Revision, nil
}

// awaitDelete watches the keys under prefix from revision rev until one is
// deleted, ctx ends, or the cluster ends the watch: then it pauses for
// *pause, which doubles (to 2 s at most) until a watch sees a deletion
// again, so a cluster that keeps ending watches is not asked in a busy
// loop. report is called once at the start and then about once a second,
// without asking the cluster. The caller looks again either way.
func awaitDelete(ctx context.Context, cl *clientv3.Client, prefix string, rev int64, report func(), pause *time.Duration) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	events := cl.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterPut())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	report()
	for {
		select {
		case resp, ok := <-events:
			switch {
			case !ok || resp.Canceled || resp.Err() != nil:
				sleep(ctx, *pause, 0)
				*pause = min(*pause*2, 2*time.Second)
				return
			case len(resp.Events) > 0:
				*pause = 100 * time.Millisecond
				return
			}
		case <-tick.C:
			report()
		case <-ctx.Done():
			return
		}
	}
}

// agreeMax records max as runID's size, or checks that it is the recorded
// one. While no slot key exists at all the size is ours to set (a slot of
// another size taken meanwhile keeps its size: its transaction compares
// the size's value, and AcquireSlot agrees again); while one is held, a
// different recorded size is a mismatch naming its holder.
func (l *Locker) agreeMax(ctx context.Context, cl *clientv3.Client, runID string, max int) error {
	key, want, slots := l.maxKey(runID), strconv.Itoa(max), l.slotsPrefix(runID)
	rctx, cancel := l.rpc(ctx)
	defer cancel()
	resp, err := cl.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(slots), "=", 0).WithPrefix()).
		Then(clientv3.OpPut(key, want)).
		Else(clientv3.OpGet(key), clientv3.OpGet(slots, clientv3.WithFirstCreate()...)).Commit()
	if err != nil {
		return l.unavailable(err)
	}
	if resp.Succeeded {
		return nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	switch {
	case len(kvs) == 0:
		// Slots held and no size recorded: record ours, unless another
		// holder just did (then our slot's transaction fails, and we agree
		// again).
		_, err = cl.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).Then(clientv3.OpPut(key, want)).Commit()
		if err != nil {
			return l.unavailable(err)
		}
		return nil
	case string(kvs[0].Value) == want:
		return nil
	}
	// The slots' range has a key: the compare failed.
	return l.maxMismatch(runID, max, kvs, resp.Responses[1].GetResponseRange().Kvs)
}

// maxMismatch is the refusal of --max want (0: --shared) on a run id whose
// --max semaphore has a holder (slotKVs[0], the oldest slot key), naming
// both as the file backend does; sizeKVs is the recorded size (none: 0).
func (l *Locker) maxMismatch(runID string, want int, sizeKVs, slotKVs []*mvccpb.KeyValue) error {
	have := 0
	if len(sizeKVs) > 0 {
		have, _ = strconv.Atoi(string(sizeKVs[0].Value))
	}
	return locks.MaxMismatch(runID, want, have, holderOf(l.slotOwnerFromKV(slotKVs[0])))
}

// MaxOf is the size recorded for runID's semaphore (run --max); found is
// false when it was never used as one.
func (l *Locker) MaxOf(ctx context.Context, runID string) (max int, found bool, err error) {
	err = l.query(ctx, func(rctx context.Context, cl *clientv3.Client) error {
		resp, err := cl.Get(rctx, l.maxKey(runID))
		if err != nil || len(resp.Kvs) == 0 {
			return err
		}
		max, err = strconv.Atoi(string(resp.Kvs[0].Value))
		if err != nil || max < 1 || max > locks.MaxSlots {
			return fmt.Errorf("the size of run %q's semaphore (%s) is %q, not a number of slots", runID, l.maxKey(runID), resp.Kvs[0].Value)
		}
		found = true
		return nil
	})
	return max, found, err
}
