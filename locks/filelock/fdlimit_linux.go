package filelock

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrFewDescriptors: the open-file limit leaves too few descriptors for a
// run to take its lock, supervise its command and always release the lock.
var ErrFewDescriptors = errors.New("too few file descriptors")

// spareDescriptors is how many descriptors a run needs beyond those open
// when it starts: Go's poller (epoll, eventfd), the guard, the fence file
// the hold keeps, a temp file, a read of the lock file, a waiter's inotify
// instance, pidfd and queued hold, the pipe os/exec starts the child with,
// and the two reserved for the release — with a few to spare.
const spareDescriptors = 16

// readerDescriptors is how many a command that supervises nothing (status,
// gc, break) needs beyond those open: Go's poller (epoll, eventfd), the
// file it reads at a time. Past that, a shortage is an EMFILE on one file,
// reported as such, not the runtime's abort.
const readerDescriptors = 3

// probeBelow is the limit under which the descriptors a run needs are
// taken, to see that they can be had, instead of taken to be there: only a
// parent leaking hundreds of descriptors into us could make a larger limit
// too small.
const probeBelow = 256

var reserve struct {
	sync.Mutex
	fds [2]int
	set bool
}

// ReserveDescriptors checks that the open-file limit leaves room for a run
// and sets aside two descriptors (a pipe: no filesystem needed) that
// FreeReserve gives back for the release, whatever the run used meanwhile.
// It must run before anything starts Go's poller: below the limit that
// needs, the runtime would abort the process.
func ReserveDescriptors() error {
	if err := checkDescriptors(spareDescriptors, "to run the command and always release its lock"); err != nil {
		return err
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("%w: reserve descriptors for the release: %w", ErrFewDescriptors, os.NewSyscallError("pipe2", err))
	}
	reserve.Lock()
	reserve.fds, reserve.set = p, true
	reserve.Unlock()
	return nil
}

// CheckDescriptors is ReserveDescriptors for a command that supervises
// nothing and holds no lock (status, gc, break): it only checks that the
// limit leaves the few it needs, so that a tiny `ulimit -n` is one line and
// 73, never the Go runtime's abort ("netpollinit failed"). It must run
// before anything starts Go's poller.
func CheckDescriptors() error {
	return checkDescriptors(readerDescriptors, "to run")
}

// checkDescriptors fails when fewer than spare descriptors are left under
// the open-file limit; purpose says what for, in the message. It opens
// them (O_PATH opens of /, which need nothing of any filesystem), so
// descriptors numbered above the limit (a parent's fd 251), which take no
// room a new one could have, count for nothing, and closes them again.
func checkDescriptors(spare int, purpose string) error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= probeBelow {
		return nil // cannot tell, or plenty: go on
	}
	for n := 0; n < spare; n++ {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: the open-file limit is %d (ulimit -n) and leaves fewer than the %d descriptors withlock needs %s: raise it (ulimit -n 64)",
				ErrFewDescriptors, lim.Cur, spare, purpose)
		}
		defer unix.Close(fd)
	}
	return nil
}

// FreeReserve closes the descriptors ReserveDescriptors set aside.
func FreeReserve() {
	reserve.Lock()
	defer reserve.Unlock()
	if reserve.set {
		unix.Close(reserve.fds[0])
		unix.Close(reserve.fds[1])
		reserve.set = false
	}
}
