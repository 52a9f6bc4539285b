package filelock

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockGuard takes flock(LOCK_EX) on the guard file, waiting at most bound.
// The guard serialises every state transition of one run id among withlock
// processes (reclaim, acquire, renew, release, break) and is held only
// for the few file operations of one transition.
//
// flock has no timed form, and a blocked flock cannot be interrupted (Go's
// signal handlers restart it). So a contended guard is queued for as the
// hold is (queueExclusive: a goroutine blocked in flock(2), granted the
// moment the holder lets go) while the caller waits for the grant or the
// bound. Sleeping and retrying LOCK_NB instead would pay Go's timer
// granularity on every retry: a sleep shorter than a millisecond takes a
// whole one when the process has nothing else to do. A stopped holder keeps the guard past the
// bound, and that is reported as ErrGuardBusy; the abandoned flock then
// releases the guard as soon as it is granted.
func lockGuard(fsys FS, path string, bound time.Duration) (*os.File, error) {
	f, err := fsys.OpenGuard(path)
	if err != nil {
		return nil, explainDenied(fsys, "guard", path, err)
	}
	// Another user's guard (a shared dir) could be held forever: refused
	// before waiting on it, never a silent wait (checkOwned); root, which
	// may use it, gives up on it past the bound (below) — a guard held that
	// long by another user is a plant, not a state transition in progress.
	fi, err := f.Stat()
	if err == nil {
		err = checkOwned("guard", path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	h, err := queueExclusive(f)
	if err != nil {
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	if g := h.take(); g != nil {
		return g, nil // free at once: no timer
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-h.granted:
		return h.take(), nil
	case <-timer.C:
		h.abandon() // the guard is let go as soon as it is granted after all
		if uid, ok := ownerUID(fi); ok && uid != euid() {
			return nil, fmt.Errorf("%w, and not granted within %v", &NotOursError{What: "guard", Path: path, UID: uid}, bound)
		}
		return nil, fmt.Errorf("%w: %s not granted within %v", ErrGuardBusy, path, bound)
	}
}

// flock is flock(2), retried on EINTR.
func flock(fd, how int) error {
	for {
		err := unix.Flock(fd, how)
		if err != unix.EINTR {
			return err
		}
	}
}

// pread is one pread(2) of f at off, retried on EINTR.
func pread(f *os.File, buf []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(int(f.Fd()), buf, off)
		if err != unix.EINTR {
			return max(n, 0), err
		}
	}
}

// unlockGuard releases the flock by closing the file.
func unlockGuard(f *os.File) {
	if f != nil {
		f.Close()
	}
}
