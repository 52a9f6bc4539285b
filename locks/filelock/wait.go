package filelock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/withlock/withlock/locks"
)

// waitFor is one wait of the file backend, the only one: for a run lock
// (Acquire), for a slot (AcquireSlot), for the shared holders to leave
// (AwaitNoSharers) and for a holder to let go (AwaitRelease). It says what each attempt tries and what the wait
// between attempts may be woken by; loop does the rest.
type waitFor struct {
	runID string
	start time.Time
	wait  time.Duration // < 0: forever; 0: one attempt
	names []string      // base names of the lock files whose removal or rename wakes the wait
	// try makes one attempt: done, or the holders in the way, or an error.
	try func() (done bool, held []*locks.Holder, err error)
	// queue, when set, is asked before each wait whether to wait in a
	// kernel queue (a flock, hold.go) instead of watching the files: the
	// request to wait in, or one still pending whose grant also wakes the
	// watch (inQueue false); again: look again at once (granted just now).
	queue func(held []*locks.Holder) (q *holdRequest, inQueue, again bool)
	// renew, when set, is a lock kept alive while the wait lasts.
	renew *Lock
	// heldError is the error of a wait that ran out; nil (or a nil
	// error): a *HeldError naming the first holder.
	heldError func(held []*locks.Holder, now time.Time) error
}

// loop runs attempts until one is done, the wait runs out or ctx ends. It
// never spins: between two attempts it blocks until something may have
// changed — a lock file removed or renamed (inotify), a holder on this host
// gone (pidfd), a holder's command tree ended (its tree file's flock), a
// queued flock granted, ctx ended — and at the latest until a holder's lock
// may have turned stale by itself, or a safety poll of seconds (a capped,
// jittered backoff without inotify). An attempt may follow another at once
// only once per cause: the waker just made, the hold just granted, the
// grace for a just-died holder. Faults that are not contention pause like a
// poll and end after maxFaults attempts with ErrUnavailable.
func (r *RunLocker) loop(ctx context.Context, f waitFor) error {
	var w *waker
	defer func() {
		if w != nil {
			w.Close()
		}
	}()
	trees := treeWatch{ended: make(chan struct{}, 1)}
	bo := backoff{min: 10 * time.Millisecond, max: time.Second}
	faults := 0
	graced := false
	var renewAt time.Time
	if f.renew != nil {
		renewAt = r.now().Add(r.TTL / 3)
	}
	for {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		done, held, err := f.try()
		if done {
			return nil
		}
		now := r.now()
		left := time.Duration(1<<63 - 1)
		if f.wait >= 0 {
			left = f.start.Add(f.wait).Sub(now)
		}
		if err != nil {
			if fatal, ok := r.fault(f.runID, err, &faults, left); ok {
				return fatal
			}
			// Retry a fault after a pause even when the wait is over: the
			// attempts are bounded by maxFaults, and a transient error
			// (a directory being recreated) deserves a moment.
			if w == nil {
				w = newWaker(ctx, r.Dir, f.names...)
			}
			w.Wait(bo.next(), 0, nil)
			continue
		}
		faults = 0
		if h := orphaned(held); h != nil && !graced {
			// The holder just died, most likely: its direct child's
			// parent-death signal is in flight and the tree may be
			// ending. Give it orphanGrace before calling it a conflict.
			graced = true
			grace, cancel := context.WithTimeout(ctx, orphanGrace)
			waitTreeEnd(grace, h.TreeFile)
			cancel()
			continue
		}
		if left <= 0 {
			if f.heldError != nil {
				if err := f.heldError(held, now); err != nil {
					return err
				}
			}
			FindPids(held[0])
			return &locks.HeldError{RunID: f.runID, Holder: *held[0], At: now}
		}
		var q *holdRequest
		inQueue := false
		if f.queue != nil {
			var again bool
			if q, inQueue, again = f.queue(held); again {
				continue
			}
		}
		if !inQueue && w == nil {
			// Made only once there is something to watch (a waiter queued
			// in a flock watches nothing); the attempt right after it sees
			// every change from then on.
			w = newWaker(ctx, r.Dir, f.names...)
			continue
		}
		if r.OnWait != nil {
			r.OnWait(held[0], now.Sub(f.start))
		}
		if inQueue {
			// Queued in the kernel: woken when the one in front lets go,
			// as the only waiter woken. The poll covers what the queue
			// cannot show (hold.go).
			r.at("wait:queued")
			waitHold(ctx, q, recheckBy(held, now, min(left, jitter(r.holdPollEvery()))))
			continue
		}
		timeout := min(left, bo.next())
		if w.Watching() {
			// inotify wakes us on every change that matters; this poll
			// only covers what it cannot see (a writer rewriting the file
			// in place, a network filesystem).
			timeout = min(left, jitter(5*time.Second))
		}
		timeout = recheckBy(held, now, timeout)
		if f.renew != nil {
			timeout = min(timeout, max(renewAt.Sub(now), time.Millisecond))
		}
		r.at("wait:watching")
		// One holder on this host is watched through its pidfd; any other
		// holder's tree (orphaned, another pid namespace, one of several
		// slot holders) through its tree file's flock.
		pid := 0
		if len(held) == 1 && held[0].Local && !held[0].Orphaned {
			pid = held[0].Pid
		}
		// Still queued for a flock (a holder without the hold, or one we saw
		// before it took it): its grant wakes us too, unless a tree does.
		wake := trees.add(held, pid != 0)
		if wake == nil && q.pending() {
			wake = q.grantedChan()
		}
		w.Wait(timeout, pid, wake)
		if f.renew != nil && !r.now().Before(renewAt) {
			if err := f.renew.Renew(); err != nil {
				return err
			}
			renewAt = r.now().Add(r.TTL / 3)
		}
	}
}

// orphaned is the first holder whose holder died with its command still
// running, or nil.
func orphaned(held []*locks.Holder) *locks.Holder {
	for _, h := range held {
		if h.Orphaned {
			return h
		}
	}
	return nil
}

// treeWatch turns the end of any of the holders' command trees into a
// token on ended: each tree file is waited on once (a goroutine blocked in
// its flock, awaitTreeEnd); a tree file's name is one acquisition's.
type treeWatch struct {
	files map[string]bool
	ended chan struct{}
}

// add watches the trees of held not watched yet, all but a lone local
// holder's when its pid is watched instead, and returns the channel of
// their ends (nil when none of held's is watched).
func (t *treeWatch) add(held []*locks.Holder, pidWatched bool) <-chan struct{} {
	watched := false
	for _, h := range held {
		if h.TreeFile == "" || (pidWatched && !h.Orphaned && h.Local) {
			continue
		}
		if t.files[h.TreeFile] {
			watched = true
			continue
		}
		if ended := awaitTreeEnd(h.TreeFile); ended != nil {
			if t.files == nil {
				t.files = make(map[string]bool)
			}
			t.files[h.TreeFile] = true
			watched = true
			go func() {
				<-ended
				select {
				case t.ended <- struct{}{}:
				default:
				}
			}()
		}
	}
	if !watched {
		return nil
	}
	return t.ended
}

// orphanGrace is how long an acquirer that finds a dead holder's tree
// still running waits for it to end before it reports a conflict: the
// direct child gets a parent-death signal when the holder dies, and its
// exit (and its descendants' when they were in the group being killed)
// takes a moment. Trees that outlive it hold the lock.
const orphanGrace = 250 * time.Millisecond

// defaultHoldPoll is how often a waiter queued in a flock looks at the
// lock files anyway (±25%): a lock file removed by hand or broken while its
// holder runs, and a hold kept by a stopped process, are seen within it.
// Like the directory watch's safety poll it is seconds, not less: an idle
// waiter should cost next to no CPU.
const defaultHoldPoll = 5 * time.Second

func (r *RunLocker) holdPollEvery() time.Duration {
	if p := r.knobs().holdPoll; p > 0 {
		return p
	}
	return defaultHoldPoll
}

// recheckBy shortens timeout to end just after a holder's lock may have
// turned stale by itself.
func recheckBy(held []*locks.Holder, now time.Time, timeout time.Duration) time.Duration {
	for _, h := range held {
		if h.RecheckAt.IsZero() {
			continue // held while its tree runs: it turns stale only when that ends
		}
		until := h.RecheckAt.Sub(now) + 5*time.Millisecond
		timeout = min(timeout, max(until, 5*time.Millisecond))
	}
	return timeout
}

// waitHold blocks until the hold is granted, timeout passes or ctx ends.
func waitHold(ctx context.Context, hold *holdRequest, timeout time.Duration) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-hold.grantedChan():
	}
}

// backoff doubles from min to max; every value carries ±25% jitter so
// waiters on one lock do not wake in step.
type backoff struct {
	min, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(b.cur*2, b.max)
	}
	return jitter(b.cur)
}

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*3/4 + rand.N(d/2+1)
}
