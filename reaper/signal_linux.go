package reaper

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Signal sends sig to p, unless p's pid now belongs to another process.
//
// The check is race-free where pidfds exist (Linux 5.3+): the pidfd is opened
// first, then the start time is compared, so the signal goes to the very
// process that was checked even if its pid is reused right after. A process
// that is already gone (or reused) is not an error.
func Signal(p Process, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return signalByPid(p, sig) // no pidfd support: best effort
	}
	defer unix.Close(fd)
	if !sameProcess(p) {
		return nil
	}
	err = unix.PidfdSendSignal(fd, sig, nil, 0)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %d: %w", p.Pid, err)
	}
	return nil
}

// signalByPid signals without a pidfd: the start-time check narrows the reuse
// window to a few microseconds instead of closing it.
func signalByPid(p Process, sig syscall.Signal) error {
	if !sameProcess(p) {
		return nil
	}
	err := unix.Kill(p.Pid, sig)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %d: %w", p.Pid, err)
	}
	return nil
}

// sameProcess reports whether p's pid still names the process started at
// p.StartTime.
func sameProcess(p Process) bool {
	now, err := ReadProcess(p.Pid)
	return err == nil && now.StartTime == p.StartTime
}

// SignalAll sends sig to every process in ps and returns the errors joined.
func SignalAll(ps []Process, sig syscall.Signal) error {
	var errs []error
	for _, p := range ps {
		if err := Signal(p, sig); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
