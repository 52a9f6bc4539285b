package main

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks/filelock"
)

// signalHolder sends sig to pid only if it is still the process that
// started at start (clock ticks since boot; 0: not checked). A process that
// is gone, or whose pid names another process now, is not signalled and is
// not an error: its lock is released or stale. The pidfd pins the process:
// once the start time is checked through it, the pid cannot be reused
// before the signal lands; without pidfds (kernels before 5.3) a tiny
// window remains between the check and the kill.
func signalHolder(pid int, start uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		defer unix.Close(fd)
	}
	now, rerr := filelock.ProcessStartTime(pid)
	switch {
	case errors.Is(rerr, fs.ErrNotExist) || errors.Is(rerr, syscall.ESRCH) || (rerr == nil && start != 0 && now != start):
		return nil
	case rerr != nil:
		return rerr
	case err == nil:
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	default:
		err = unix.Kill(pid, sig)
	}
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}
