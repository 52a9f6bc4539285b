package supervisor

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
)

// signalProcess sends sig to p, unless p's pid now belongs to another
// process.
//
// The check is race-free where pidfds exist (Linux 5.3+): the pidfd is
// opened first, then the start time is compared, so the signal goes to the
// very process that was checked even if its pid is reused right after.
// Without pidfds the start-time check narrows the reuse window to a few
// microseconds instead of closing it. A process that is already gone (or
// reused) is not an error.
func signalProcess(p proc.Process, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err == nil {
		defer unix.Close(fd)
	}
	if now, rerr := proc.Read(p.Pid); rerr != nil || now.StartTime != p.StartTime {
		return nil
	}
	if err == nil {
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	} else {
		err = unix.Kill(p.Pid, sig) // no pidfd support: best effort
	}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %d: %w", p.Pid, err)
	}
	return nil
}
