package supervisor

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// setSubreaper marks this process as a child subreaper (on=true) or clears
// the mark: orphaned descendants (double-forked, setsid'd daemons) then
// reparent to us instead of init.
func setSubreaper(on bool) error {
	var v uintptr
	if on {
		v = 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, v, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// exit is one child reaped by reapAll: its pid and wait status.
type exit struct {
	pid    int
	status unix.WaitStatus
}

// reapAll collects every child of this process that has exited, without
// blocking. It loops wait4(-1, WNOHANG) until no exited child is left
// (signals coalesce: one SIGCHLD may stand for many exits).
//
// It takes every child's status, so the supervisor must be the only waiter
// in the process: a concurrent os/exec Cmd.Wait would lose its status to
// it. The supervisor therefore never uses Cmd.Wait and reads the main
// child's status from what reapAll returns (containerd's pkg/sys/reaper
// does the same).
func reapAll() ([]exit, error) {
	var exits []exit
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return exits, nil
		case err != nil:
			return exits, fmt.Errorf("wait4: %w", err)
		case pid <= 0:
			return exits, nil
		}
		exits = append(exits, exit{pid: pid, status: ws})
	}
}

// runsNothing reports whether a process's state letter is one that runs
// nothing: stopped, traced, a zombie, or gone (0).
func runsNothing(state byte) bool {
	return state == 0 || state == 'T' || state == 't' || state == 'Z'
}
