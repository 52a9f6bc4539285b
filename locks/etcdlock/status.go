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
		resp, err := cl.Get(rctx, l.prefix(), clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			return err
		}
		owners = ownersOf(rctx, cl, l.prefix(), resp.Kvs)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(owners, func(a, b *Owner) int { return strings.Compare(a.RunID, b.RunID) })
	return owners, nil
}

// ownersOf turns the keys under prefix, oldest first, into the holders of
// each run id: its oldest key, or when that is a shared holder's, every
// shared key queued before the first exclusive one. The other keys are
// waiters, counted on the first holder. Each holder gets what is left of
// its lease.
func ownersOf(ctx context.Context, cl *clientv3.Client, prefix string, kvs []*mvccpb.KeyValue) []*Owner {
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
	for _, o := range owners {
		o.TTL = leaseLeft(ctx, cl, o.Lease)
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

// Owner finds who holds runID's lock; nil when it is free. When it is held
// shared, it is the oldest shared holder (Holders lists them all).
func (l *Locker) Owner(ctx context.Context, runID string) (*Owner, error) {
	holders, err := l.Holders(ctx, runID)
	if err != nil || len(holders) == 0 {
		return nil, err
	}
	return holders[0], nil
}

// Holders lists who holds runID's lock, oldest first: its exclusive holder,
// or every shared one; none when it is free.
func (l *Locker) Holders(ctx context.Context, runID string) ([]*Owner, error) {
	var holders []*Owner
	err := l.query(ctx, func(rctx context.Context, cl *clientv3.Client) error {
		resp, err := cl.Get(rctx, l.MutexName(runID)+"/", clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			return err
		}
		for _, o := range ownersOf(rctx, cl, l.prefix(), resp.Kvs) {
			if o.RunID == runID {
				holders = append(holders, o)
			}
		}
		return nil
	})
	return holders, err
}

// Break takes the run lock of runID away from its holders by revoking
// their leases: their keys go, the next waiter gets the lock, and a
// withlock holder sees the deletion at once and tears its child down (exit
// 76). A lock held shared loses every shared holder. It returns the owners
// it broke, or ErrNotHeld.
func (l *Locker) Break(ctx context.Context, runID string) ([]*Owner, error) {
	holders, err := l.Holders(ctx, runID)
	if err != nil {
		return nil, err
	}
	if len(holders) == 0 {
		return nil, fmt.Errorf("run %q: %w", runID, ErrNotHeld)
	}
	for i, o := range holders {
		if err := l.Revoke(ctx, o); err != nil {
			return holders[:i], err
		}
	}
	return holders, nil
}

// Revoke ends the lease of owner o (found by Owner), which deletes its key;
// a key without a lease is deleted. A lease that is already gone is not an
// error: the lock is free either way.
func (l *Locker) Revoke(ctx context.Context, o *Owner) error {
	return l.query(ctx, func(rctx context.Context, cl *clientv3.Client) error {
		if o.Lease == clientv3.NoLease {
			_, err := cl.Delete(rctx, o.Key)
			return err
		}
		if _, err := cl.Revoke(rctx, o.Lease); !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return err
		}
		return nil // it expired or was released meanwhile
	})
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
