package filelock

import (
	"os"
	"sync"
)

// The hold is how waiters on one host queue for a run lock without a
// thundering herd. A holder that records "hold": true in its payload keeps
// an exclusive flock on the run id's fence file (<hash>.fence, which gc and
// break never remove) from before its lock file is written until after it
// is removed, or until its process ends. A waiter on the same host that sees
// such a holder queues for that flock in the kernel instead of watching the
// directory. The kernel grants a released flock to one waiter at a time, so
// a release wakes the one waiter that takes the lock next; with inotify,
// every release wakes every waiter, and each of them reads the lock file
// only to find it taken again: a hand-off among n waiters costs n wake-ups
// instead of one.
//
// The lock file stays the only truth of who holds the lock: the hold only
// decides when a waiter looks again. Whoever owns the hold is the holder or
// the waiter next in line, which watches the directory as before. A holder
// that could not take the hold (the waiter next in line has it, or a stopped
// process does) writes "hold": false, and its waiters watch the directory.
// A waiter in the queue still looks again at the holder's expiry and every
// defaultHoldPoll, which covers what the queue cannot see: a lock file removed by
// hand or by `withlock break` while its holder runs, or a holder that went
// on without the hold.
type holdRequest struct {
	f       *os.File
	granted chan struct{} // closed once the flock is ours

	mu    sync.Mutex
	state holdState
}

type holdState int

const (
	holdPending   holdState = iota // queued in flock(2)
	holdGranted                    // ours, not yet handed to a lock
	holdTaken                      // handed to a lock, which releases it
	holdAbandoned                  // not wanted: released as soon as granted
	holdClosed
)

// grant records that the flock was granted; a request already abandoned
// releases it at once, letting the next waiter in.
func (h *holdRequest) grant(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil || h.state == holdAbandoned {
		h.f.Close()
		h.state = holdClosed
		return
	}
	h.state = holdGranted
	close(h.granted)
}

// current is the request's state; no request counts as closed.
func (h *holdRequest) current() holdState {
	if h == nil {
		return holdClosed
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// isGranted reports whether the flock is ours and not yet handed on.
func (h *holdRequest) isGranted() bool { return h.current() == holdGranted }

// pending reports whether the request is still queued.
func (h *holdRequest) pending() bool { return h.current() == holdPending }

// live reports whether the request still stands: queued or granted.
func (h *holdRequest) live() bool {
	s := h.current()
	return s == holdPending || s == holdGranted
}

// take hands a granted hold to a lock, which then releases it; it returns
// nil when the flock is not ours (yet).
func (h *holdRequest) take() *os.File {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state != holdGranted {
		return nil
	}
	h.state = holdTaken
	return h.f
}

// abandon gives the hold up: released now if it is ours, or the moment the
// kernel grants it (a blocked flock cannot be withdrawn).
func (h *holdRequest) abandon() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.state {
	case holdPending:
		h.state = holdAbandoned
	case holdGranted:
		h.f.Close()
		h.state = holdClosed
	}
}

// grantedChan is closed once the hold is ours; nil (never ready) without a
// request.
func (h *holdRequest) grantedChan() <-chan struct{} {
	if h == nil {
		return nil
	}
	return h.granted
}
