//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Status lists the run locks held under the prefix, one Owner per holder
// (sorted by run id, then oldest first; several for a run id held shared),
// with its queued waiters counted and what is left of its lease.
func (l *Locker) Status(ctx context.Context) ([]*Owner, error) {
	var owners []*Owner
	err := l.query(ctx, func(rctx context.Context, cl *clientv3.Client) error {
		resp, err := cl.Get(rctx, l.prefix(), withQueueOrder()...)
		if err != nil {
			return err
		}
		owners = ownersOf(l.prefix(), resp.Kvs)
		for _, o := range owners {
			o.TTL = leaseLeft(rctx, cl, o.Lease)
		}
		slices.SortStableFunc(owners, func(a, b *Owner) int { return strings.Compare(a.RunID, b.RunID) })
		return nil
	})
	return owners, err // owners is nil when the read failed
}

// ownersOf turns the keys under prefix, oldest first, into the holders of
// each run id: its oldest key, or when that is a shared holder's, every
// shared key queued before the first exclusive one. The other keys are
// waiters, counted on the first holder.
func ownersOf(prefix string, kvs []*mvccpb.KeyValue) []*Owner {
	type run struct {
		first   *Owner
		holding bool // still taking holders: only shared keys so far
	}
	byRun := map[string]*run{}
	var owners []*Owner
	for _, kv := range kvs {
		runID, _, ok := splitKey(prefix, string(kv.Key))
		if !ok {
			continue
		}
		o := ownerFromKV(runID, kv)
		r := byRun[runID]
		switch {
		case r == nil:
			byRun[runID] = &run{first: o, holding: o.Shared}
		case r.holding && o.Shared:
		default:
			r.holding = false
			r.first.Waiters++
			continue
		}
		owners = append(owners, o)
	}
	return owners
}

// leaseLeft is the remaining TTL of a lease, -1 when unknown.
func leaseLeft(ctx context.Context, cl *clientv3.Client, id clientv3.LeaseID) time.Duration {
	if id == clientv3.NoLease {
		return -1
	}
	resp, err := cl.TimeToLive(ctx, id)
	if err != nil || resp.TTL < 0 {
		return -1
	}
	return time.Duration(resp.TTL) * time.Second
}

// Break takes the run lock of runID away from its holders by revoking
// their leases: their keys go, the next waiter gets the lock, and a
// withlock holder sees the deletion at once and tears its child down (exit
// 76). A lock held shared loses every shared holder. A key without a lease
// is deleted; a lease already gone is not an error (the lock is free
// either way). It returns the owners it broke, or ErrNotHeld.
func (l *Locker) Break(ctx context.Context, runID string) ([]*Owner, error) {
	var broke []*Owner
	err := l.query(ctx, func(rctx context.Context, cl *clientv3.Client) error {
		resp, err := cl.Get(rctx, l.queuePrefix(runID), withQueueOrder()...)
		if err != nil {
			return err
		}
		for _, o := range ownersOf(l.prefix(), resp.Kvs) {
			if o.RunID != runID {
				continue // a foreign key deeper under the mutex's prefix
			}
			if o.Lease == clientv3.NoLease {
				_, err = cl.Delete(rctx, o.Key)
			} else if _, err = cl.Revoke(rctx, o.Lease); errors.Is(err, rpctypes.ErrLeaseNotFound) {
				err = nil
			}
			if err != nil {
				return err
			}
			broke = append(broke, o)
		}
		return nil
	})
	if err == nil && len(broke) == 0 {
		err = fmt.Errorf("run %q: %w", runID, ErrNotHeld)
	}
	return broke, err
}

// query runs one short exchange with the cluster on its own client, bounded
// by the dial timeout; any failure is ErrUnavailable.
func (l *Locker) query(ctx context.Context, f func(context.Context, *clientv3.Client) error) error {
	cl, err := l.newClient()
	if err != nil {
		return l.unavailable(err)
	}
	defer cl.Close()
	rctx, cancel := l.rpc(ctx)
	defer cancel()
	if err := f(rctx, cl); err != nil {
		return l.unavailable(err)
	}
	return nil
}
