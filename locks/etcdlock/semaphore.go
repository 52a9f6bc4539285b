//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
	if err := l.agreeMax(ctx, runID, max); err != nil {
		return nil, 0, err
	}
	if err := l.refuseIfShared(ctx, runID, max); err != nil {
		return nil, 0, err
	}
	cl, err := l.newClient()
	if err != nil {
		return nil, 0, l.unavailable(err)
	}
	defer cl.Close()
	pause := 100 * time.Millisecond
	for {
		owners, rev, err := l.slotOwners(ctx, cl, runID, max)
		if err != nil {
			return nil, 0, err
		}
		for k, o := range owners {
			if o != nil {
				continue
			}
			lock, err := l.Acquire(ctx, locks.SlotRunID(runID, locks.ModeMax, k), 0)
			if err == nil {
				return lock, k, nil
			}
			if !errors.Is(err, locks.ErrHeld) {
				return nil, 0, err
			}
			// Taken just now: its owner is named below; our key's
			// deletion wakes the watch once, and the next read sees it held.
			owners[k] = heldOwner(err)
		}
		held := make([]locks.Holder, len(owners))
		for k, o := range owners {
			if o.Holder != nil {
				held[k] = *o.Holder
			}
		}
		waited := time.Since(start)
		if wait >= 0 && waited >= wait {
			return nil, 0, &locks.SlotsHeldError{RunID: runID, Max: max, Holders: held}
		}
		left := time.Duration(0)
		if wait >= 0 {
			left = wait - waited
		}
		report := func() {
			if l.OnWait != nil {
				l.OnWait(&held[0], time.Since(start))
			}
		}
		switch woke, err := awaitDelete(ctx, cl, l.slotsPrefix(runID), rev+1, left, report); {
		case ctx.Err() != nil:
			return nil, 0, context.Cause(ctx)
		case woke:
			pause = 100 * time.Millisecond
		default:
			// The watch ended without a deletion (the wait ran out, or
			// the cluster cancelled it): look again, pausing only after
			// a fault.
			if err != nil && !sleep(ctx, pause, left) {
				return nil, 0, context.Cause(ctx)
			}
			pause = min(2*pause, 2*time.Second)
		}
	}
}

// heldOwner is the owner an Acquire's ErrHeld names.
func heldOwner(err error) *Owner {
	var he *locks.HeldError
	if errors.As(err, &he) {
		return &Owner{RunID: he.RunID, Key: he.Holder.Path, Holder: &he.Holder, TTL: -1}
	}
	var oe *OtherClientError
	if errors.As(err, &oe) && oe.Owner != nil {
		return oe.Owner
	}
	return &Owner{TTL: -1}
}

// slotOwners reads the keys of runID's max slots in one range: the owner
// of each slot (nil: free) and the revision read at.
func (l *Locker) slotOwners(ctx context.Context, cl *clientv3.Client, runID string, max int) ([]*Owner, int64, error) {
	rctx, cancel := context.WithTimeout(ctx, l.dialTimeout())
	defer cancel()
	resp, err := cl.Get(rctx, l.slotsPrefix(runID), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, context.Cause(ctx)
		}
		return nil, 0, l.unavailable(err)
	}
	owners := make([]*Owner, max)
	for _, kv := range resp.Kvs {
		id, _, ok := splitKey(l.prefix(), string(kv.Key))
		if !ok {
			continue
		}
		base, mode, k, ok := locks.ParseSlotRunID(id)
		if !ok || base != runID || mode != locks.ModeMax || k >= max || owners[k] != nil {
			continue
		}
		owners[k] = ownerFromKV(id, kv) // oldest first: the slot's owner
	}
	return owners, resp.Header.Revision, nil
}

// awaitDelete watches the keys under prefix from revision rev until one is
// deleted (woke true), left runs out (left 0: no limit), ctx ends, or the
// cluster ends the watch (err says why). report is called once at the
// start and then about once a second, without asking the cluster.
func awaitDelete(ctx context.Context, cl *clientv3.Client, prefix string, rev int64, left time.Duration, report func()) (woke bool, err error) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	if left > 0 {
		wctx, cancel = context.WithTimeout(clientv3.WithRequireLeader(ctx), left)
	}
	defer cancel()
	events := cl.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(rev), clientv3.WithFilterPut())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	report()
	for {
		select {
		case resp, ok := <-events:
			switch {
			case !ok:
				if wctx.Err() != nil {
					return false, nil
				}
				return false, errors.New("watch closed")
			case resp.Canceled || resp.Err() != nil:
				return false, fmt.Errorf("watch cancelled: %w", resp.Err())
			case len(resp.Events) > 0:
				return true, nil
			}
		case <-tick.C:
			report()
		case <-wctx.Done():
			return false, nil
		}
	}
}

// agreeMax records max as runID's size, or checks that it is the recorded
// one; a different recorded size is replaced only while no slot of it is
// held (compare-and-swap on the key's revision).
func (l *Locker) agreeMax(ctx context.Context, runID string, max int) error {
	cl, err := l.newClient()
	if err != nil {
		return l.unavailable(err)
	}
	defer cl.Close()
	key, want := l.maxKey(runID), strconv.Itoa(max)
	for attempt := 0; attempt < 3; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, l.dialTimeout())
		resp, err := cl.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, want)).Else(clientv3.OpGet(key)).Commit()
		cancel()
		if err != nil {
			return l.unavailable(err)
		}
		if resp.Succeeded {
			return nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			continue // deleted meanwhile: create it
		}
		if string(kvs[0].Value) == want {
			return nil
		}
		have, _ := strconv.Atoi(string(kvs[0].Value))
		for k := 0; k < have; k++ {
			rctx, cancel := context.WithTimeout(ctx, l.dialTimeout())
			o, err := l.owner(rctx, cl, locks.SlotRunID(runID, locks.ModeMax, k))
			cancel()
			if err != nil {
				return l.unavailable(err)
			}
			if o != nil {
				h := locks.Holder{}
				if o.Holder != nil {
					h = *o.Holder
				}
				return locks.MaxMismatch(runID, max, have, h)
			}
		}
		rctx, cancel = context.WithTimeout(ctx, l.dialTimeout())
		swap, err := cl.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)).
			Then(clientv3.OpPut(key, want)).Commit()
		cancel()
		if err != nil {
			return l.unavailable(err)
		}
		if swap.Succeeded {
			return nil
		}
	}
	return l.unavailable(fmt.Errorf("run %q: the size of its semaphore (%s) keeps changing", runID, key))
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
