package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// requestHold queues for the hold on the fence file of a run id (see hold.go). It returns nil
// when the fence file cannot be opened or locked: the caller then watches
// the directory. A hold free at once is granted before it returns.
func (r *RunLocker) requestHold(fence string) *holdRequest {
	if r.knobs().noHold {
		return nil
	}
	f, err := r.fsys().OpenCounter(fence)
	if err != nil {
		return nil
	}
	h, _ := queueExclusive(f)
	return h
}

// queueExclusive queues for an exclusive flock of f, which it then owns:
// granted before it returns when free at once; an error (f closed) when f
// cannot be locked at all.
func queueExclusive(f *os.File) (*holdRequest, error) {
	h := &holdRequest{f: f, granted: make(chan struct{})}
	fd := int(f.Fd())
	err := flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		h.grant(nil)
		return h, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		f.Close()
		return nil, err
	}
	// A thread blocked in flock(2) until the kernel grants it: Go's signal
	// handlers restart the call, so it cannot be interrupted, only
	// abandoned (see holdRequest.abandon).
	go func() { h.grant(flock(fd, unix.LOCK_EX)) }()
	return h, nil
}

// tryHold takes the hold on f, the fence file a new holder has open,
// without waiting.
func (r *RunLocker) tryHold(f *os.File) bool {
	if r.knobs().noHold {
		return false
	}
	return flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}
