//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
// Unlike the file backend, a waiter polls the slots (capped backoff with
// jitter, 100 ms to 2 s) rather than watching them, and waiters are not
// lined up: each freed slot goes to whichever waiter tries first.

func (l *Locker) maxKey(runID string) string { return l.MutexName(runID) + "%00max" }

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
	pause := 100 * time.Millisecond
	for {
		held := make([]locks.Holder, 0, max)
		for k := 0; k < max; k++ {
			lock, err := l.Acquire(ctx, locks.SlotRunID(runID, locks.ModeMax, k), 0)
			if err == nil {
				return lock, k, nil
			}
			if !errors.Is(err, locks.ErrHeld) {
				return nil, 0, err
			}
			var he *locks.HeldError
			if errors.As(err, &he) {
				held = append(held, he.Holder)
			} else {
				held = append(held, locks.Holder{})
			}
		}
		waited := time.Since(start)
		if wait >= 0 && waited >= wait {
			return nil, 0, &locks.SlotsHeldError{RunID: runID, Max: max, Holders: held}
		}
		if l.OnWait != nil {
			l.OnWait(&held[0], waited)
		}
		left := time.Duration(0)
		if wait >= 0 {
			left = wait - waited
		}
		d := pause*3/4 + rand.N(pause/2+1)
		if !sleep(ctx, d, left) {
			return nil, 0, context.Cause(ctx)
		}
		pause = min(2*pause, 2*time.Second)
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
