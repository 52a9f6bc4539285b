package reaper

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WaitStatus is the wait status of a reaped child.
type WaitStatus = unix.WaitStatus

// SetSubreaper marks this process as a child subreaper (on=true) or clears the
// mark: orphaned descendants then reparent to us instead of init.
func SetSubreaper(on bool) error {
	var v uintptr
	if on {
		v = 1
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, v, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// IsSubreaper reports whether this process is a child subreaper.
func IsSubreaper() (bool, error) {
	// The kernel writes an int through the pointer; heap memory does not move
	// in Go, and KeepAlive holds it until the call is over.
	v := new(int32)
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(v)), 0, 0, 0)
	runtime.KeepAlive(v)
	if err != nil {
		return false, fmt.Errorf("prctl PR_GET_CHILD_SUBREAPER: %w", err)
	}
	return *v != 0, nil
}

// Reap collects every child of this process that has exited, without
// blocking, and returns them. It loops wait4(-1, WNOHANG) until no exited
// child is left (signals coalesce: one SIGCHLD may stand for many exits).
//
// Reap takes every child's status, so the caller must be the only waiter in
// the process: a concurrent os/exec Cmd.Wait would lose its status to Reap.
// The supervisor therefore never uses Cmd.Wait and reads the main child's
// status from what Reap returns (containerd's pkg/sys/reaper does the same).
func Reap() ([]Exit, error) {
	var exits []Exit
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
		exits = append(exits, Exit{Pid: pid, Status: ws})
	}
}
