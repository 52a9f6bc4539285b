package main

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks"
)

// signalHolder sends sig to pid only if it is still the process that
// started at start (clock ticks since boot; 0: not checked). The pidfd
// pins the process: once the start time is checked through it, the pid
// cannot be reused before the signal lands.
func signalHolder(pid int, start uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ENOSYS):
		// Kernels before 5.3: a tiny window remains between the check
		// and the kill.
		if err := checkStart(pid, start); err != nil {
			return err
		}
		return unix.Kill(pid, sig)
	case err != nil:
		return err
	}
	defer unix.Close(fd)
	if err := checkStart(pid, start); err != nil {
		return err
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0)
}

func checkStart(pid int, start uint64) error {
	if start == 0 {
		return nil
	}
	got, err := locks.ProcessStartTime(pid)
	if err != nil {
		return err
	}
	if got != start {
		return fmt.Errorf("%w: pid %d started at %d, the holder at %d", errPidReused, pid, got, start)
	}
	return nil
}
