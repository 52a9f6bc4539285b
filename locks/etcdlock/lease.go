//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// lease is a lock's lease: granted with the lock's TTL, kept alive by the
// client for as long as we follow it, and followed: lost closes when the
// lease must be presumed gone — the keepalive stream ended (the server said
// the lease expired or was revoked, or the client gave up), or no answer
// came for the TTL minus a safety margin (lostAfter). The margin makes
// withlock give the lock up before the server can hand it on.
type lease struct {
	id  clientv3.LeaseID
	ttl time.Duration // granted: the server may raise the one asked for
	// lost ends when the lease must be presumed gone; its cause says why.
	lost   context.Context
	fail   context.CancelCauseFunc
	cancel context.CancelFunc // ends the keepalive
	done   chan struct{}
}

// grantLease grants a lease of the lock's TTL and starts keeping it alive
// and following it.
func (l *Locker) grantLease(ctx context.Context, cl *clientv3.Client) (*lease, error) {
	rctx, cancel := l.rpc(ctx)
	defer cancel()
	grant, err := cl.Grant(rctx, l.ttlSeconds())
	if err != nil {
		return nil, err
	}
	renewed := time.Now()
	kctx, stop := context.WithCancel(context.Background())
	// The client sends one keepalive for the lease however many listen,
	// until the last listener's context ends.
	answers, err := cl.KeepAlive(kctx, grant.ID)
	if err != nil {
		stop()
		revokeBounded(cl, grant.ID)
		return nil, err
	}
	w := &lease{id: grant.ID, ttl: time.Duration(grant.TTL) * time.Second, cancel: stop, done: make(chan struct{})}
	w.lost, w.fail = context.WithCancelCause(context.Background())
	go w.run(kctx, answers, renewed, l.Grace)
	return w, nil
}

// revokeBounded revokes a lease, giving up after releaseBound (the lease
// then expires by itself). It tidies up after a failure, whose error is
// the one reported: a revoke that fails has nothing to add.
func revokeBounded(cl *clientv3.Client, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseBound)
	defer cancel()
	cl.Revoke(ctx, id)
}

var errLeaseEnded = errors.New("lease ended: expired, revoked, or no keepalive answer within its TTL")

// run follows the keepalive answers; renewed is when the server last
// answered for the lease, grace how long the holder needs to stop its
// command once the loss is reported (see lostAfter).
func (w *lease) run(ctx context.Context, answers <-chan *clientv3.LeaseKeepAliveResponse, renewed time.Time, grace time.Duration) {
	defer close(w.done)
	ttl := w.ttl
	after, _ := lostAfter(ttl, grace)
	timer := time.NewTimer(time.Until(renewed.Add(after)))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case a, ok := <-answers:
			if !ok {
				w.fail(errLeaseEnded)
				return
			}
			renewed, ttl = time.Now(), time.Duration(a.TTL)*time.Second
			after, _ = lostAfter(ttl, grace)
			timer.Reset(after)
		case <-timer.C:
			w.fail(fmt.Errorf("no keepalive answer from etcd since %s (lease TTL %s): presuming the lease expired",
				renewed.Format(time.TimeOnly), ttl))
			return
		}
	}
}

// stop ends the keepalive and the watch, and waits for it.
func (w *lease) stop() {
	w.cancel()
	<-w.done
}

// safetyMargin is how long before the lease's TTL runs out, counted from
// the last keepalive answer, withlock presumes it gone. The server renewed
// the lease a little before we read its answer (half a round trip), so
// waiting the full TTL could overlap with the next holder. The margin stays
// below the gap between the client's keepalives (TTL/3, sent on a 500 ms
// tick) so a healthy lease never trips it; for a 1 s TTL there is no room
// and the margin is 0.
func safetyMargin(ttl time.Duration) time.Duration {
	m := min(ttl/6, 2*time.Second, 2*ttl/3-700*time.Millisecond)
	return max(m, 0)
}

// lostAfter is how long after the last keepalive answer the lease is
// presumed gone: its TTL, less the safety margin, less grace — the time the
// holder takes to stop its command once told (TERM → grace → KILL) — so
// that the command is gone before the server can hand the lock to another
// host. It never drops below the longest gap between a healthy lease's
// answers (TTL/3 on a 500 ms tick, plus a round trip), where a healthy
// lease would trip it; fits is false when grace had to be cut short there.
func lostAfter(ttl, grace time.Duration) (after time.Duration, fits bool) {
	full := ttl - safetyMargin(ttl)
	floor := min(full, ttl/3+700*time.Millisecond)
	if want := full - max(grace, 0); want >= floor {
		return want, true
	}
	return floor, false
}
