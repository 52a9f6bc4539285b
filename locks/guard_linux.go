package locks

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockGuard takes flock(LOCK_EX) on the guard file, waiting at most bound.
// The guard serialises every state transition of one run id among withlock
// processes (reclaim, acquire, renew, release, break). flock has no timed
// form, so the wait polls LOCK_NB with a sleep that doubles from 50µs up to 20ms:
// bounded and never spinning. A stopped holder keeps it past the bound, and
// that is reported as ErrGuardBusy.
func lockGuard(fsys FS, path string, bound time.Duration) (*os.File, error) {
	f, err := fsys.OpenGuard(path)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(bound)
	// The guard is held for microseconds at a time; a waiter woken by a
	// release usually finds the releaser just closing it, so start small.
	sleep := 50 * time.Microsecond
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, &os.PathError{Op: "flock", Path: path, Err: err}
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w: %s not granted within %v", ErrGuardBusy, path, bound)
		}
		time.Sleep(sleep)
		sleep = min(sleep*2, 20*time.Millisecond)
	}
}

// unlockGuard releases the flock by closing the file.
func unlockGuard(f *os.File) {
	if f != nil {
		f.Close()
	}
}
