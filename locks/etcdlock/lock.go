//go:build etcd

package etcdlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
)

// Lock is a held run lock: the owner key of a run id's mutex and the
// lease that keeps it.
type Lock struct {
	RunID string
	Key   string // <prefix><escaped run id>/<lease in hex>
	Lease clientv3.LeaseID
	TTL   time.Duration // granted by the server

	*contender // the won contender: its client, lease, key's revision (token)

	// named is the run id the caller named (RunID is a --max slot's
	// derived one); env is what the child is told beyond the lock itself
	// (its slot, or that it holds shared).
	named  string
	env    []string
	slot   *int          // a --max slot's number
	marked chan struct{} // closed once MarkStarted's put is done

	lostErr       error      // what Heartbeat reported, if it did
	lostMu        sync.Mutex // guards stopHeartbeat
	stopHeartbeat func()     // Heartbeat's stop, if it runs

	releaseOnce sync.Once
	releaseErr  error
}

// FencingToken is the owner key's create revision: it strictly increases
// across the holders of a run id.
func (k *Lock) FencingToken() int64 { return k.token }

// Env is what the child is told about the lock it runs under: as on the
// file backend, the run id it named, WITHLOCK_SLOT and WITHLOCK_MAX for a
// --max slot, WITHLOCK_SHARED=1 for a shared holder (etcd's shared holders
// are keys of the run id's own mutex, not numbered slots: no
// WITHLOCK_SLOT).
func (k *Lock) Env() []string {
	return append([]string{
		"WITHLOCK_RUN_ID=" + cmp.Or(k.named, k.RunID),
		"WITHLOCK_LOCK_ID=" + leaseHex(k.Lease),
		"WITHLOCK_LOCK_KEY=" + k.Key,
		"WITHLOCK_FENCING_TOKEN=" + strconv.FormatInt(k.token, 10),
	}, k.env...)
}

// Heartbeat watches the lock until stop is called: the client keeps the
// lease alive by itself, so this only reports loss. lost receives one error
// (matching locks.ErrLost) when the owner key is deleted (lease revoked,
// lock broken: seen at once through a watch) or the lease must be presumed
// expired (see lease). stop waits for the watchers to end; Release
// stops them too.
func (k *Lock) Heartbeat() (lost <-chan error, stop func()) {
	ch := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The key watch ends at once when the lease is lost.
		defer context.AfterFunc(k.lease.lost, cancel)()
		err := k.watchKey(ctx)
		if k.lease.lost.Err() != nil {
			err = context.Cause(k.lease.lost)
		}
		if err == nil {
			return // stopped
		}
		// Read by release only once this goroutine is done.
		k.lostErr = fmt.Errorf("%w: etcd key %s: %w", locks.ErrLost, k.Key, err)
		ch <- k.lostErr
	}()
	stop = func() { cancel(); <-done }
	k.lostMu.Lock()
	k.stopHeartbeat = stop
	k.lostMu.Unlock()
	return ch, stop
}

// watchKey returns an error when the owner key is gone or no longer ours,
// nil when ctx ends. It watches from the revision the key was enqueued at,
// so a deletion while it waited counts too. A watch that the cluster
// cancels (compaction, no leader) is replaced after a look at the key
// itself; failed looks are retried (the lease watch covers an unreachable
// cluster).
func (k *Lock) watchKey(ctx context.Context) error {
	rev := k.enqueuedRev + 1
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for resp := range k.cl.Watch(wctx, k.Key, clientv3.WithRev(rev), clientv3.WithFilterPut()) {
			for _, ev := range resp.Events {
				cancel()
				return fmt.Errorf("deleted at revision %d (lease revoked or lock broken)", ev.Kv.ModRevision)
			}
		}
		cancel()
		rctx, cancel := context.WithTimeout(ctx, max(k.TTL/3, time.Second))
		resp, err := k.cl.Get(rctx, k.Key)
		cancel()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			k.l.Log.Debug().Err(err).Str("run_id", k.RunID).Msg("cannot read the lock key; retrying")
			sleep(ctx, 500*time.Millisecond, 0)
		case len(resp.Kvs) == 0:
			return errors.New("deleted (lease revoked or lock broken)")
		case resp.Kvs[0].CreateRevision != k.token:
			return fmt.Errorf("recreated at revision %d by someone else", resp.Kvs[0].CreateRevision)
		default:
			rev = resp.Header.Revision + 1
		}
	}
	return nil
}

// Release revokes the lease, which deletes the owner key with it, within
// releaseBound: when the cluster cannot be reached the lease's TTL frees
// the lock. It is
// safe to call more than once; the error says what did not happen, and
// matches locks.ErrLost when Heartbeat had reported the lock lost.
func (k *Lock) Release() error {
	k.releaseOnce.Do(func() { k.releaseErr = k.release() })
	return k.releaseErr
}

func (k *Lock) release() error {
	if k.marked != nil {
		<-k.marked // the client is closed below
	}
	k.lostMu.Lock()
	stopHeartbeat := k.stopHeartbeat
	k.lostMu.Unlock()
	if stopHeartbeat != nil {
		// Its key watch would retry its reads on the closed client forever.
		stopHeartbeat()
	}
	k.lease.stop()
	defer k.cl.Close()
	// Heartbeat has ended (or never ran): lostErr no longer changes.
	bound := releaseBound
	if k.lostErr != nil {
		// Lost already: the lease is gone or etcd out of reach. One short
		// try frees the lock at once if etcd is back; no need to hold the
		// exit up for longer.
		bound = lostReleaseBound
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err := k.cl.Revoke(ctx, k.Lease)
	if err == nil || errors.Is(err, rpctypes.ErrLeaseNotFound) {
		k.l.Log.Debug().Str("event", "released").Str("run_id", k.RunID).Msg("lock released")
		return nil
	}
	// The lease's TTL frees the lock.
	err = fmt.Errorf("etcd release of run %q: revoke lease %s: %w", k.RunID, leaseHex(k.Lease), err)
	if k.lostErr != nil {
		// Already reported as lost: nothing more to warn about.
		return fmt.Errorf("%w (and then %w)", k.lostErr, err)
	}
	return err
}
