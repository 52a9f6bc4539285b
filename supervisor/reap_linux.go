package supervisor

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

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

// stopSignal reports whether pid, a child of this process, is stopped, and
// by which signal (SIGTSTP, SIGTTIN, SIGTTOU for a job-control stop,
// SIGSTOP otherwise). It looks with waitid(WSTOPPED|WNOHANG|WNOWAIT), which
// takes nothing: the stop stays reportable and reapAll, which waits for
// exits only, still gets the exit status. A child that is not stopped, or
// already exited, reports false.
func stopSignal(pid int) (syscall.Signal, bool, error) {
	var info unix.Siginfo
	var err error = unix.EINTR
	for errors.Is(err, unix.EINTR) {
		err = unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil)
	}
	switch {
	case errors.Is(err, unix.ECHILD):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("waitid %d: %w", pid, err)
	}
	// With WNOHANG and nothing to report the kernel leaves si_pid zero.
	if childPid(&info) != int32(pid) || (info.Code != cldStopped && info.Code != cldTrapped) {
		return 0, false, nil
	}
	return syscall.Signal(childStatus(&info)), true, nil
}

// si_code values of a SIGCHLD siginfo (<asm-generic/siginfo.h>).
const (
	cldTrapped = 4 // a traced child stopped
	cldStopped = 5 // a child stopped by a signal
)

// siginfoFields is where si_pid and si_status sit in a SIGCHLD siginfo:
// after si_signo, si_errno and si_code, at the union that is aligned to a
// pointer (offset 16 on 64-bit systems, 12 on 32-bit ones); si_uid follows
// si_pid, then si_status.
const siginfoFields = 3*4 + (unsafe.Sizeof(uintptr(0)) - 4)

func childPid(info *unix.Siginfo) int32 {
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), siginfoFields))
}

func childStatus(info *unix.Siginfo) int32 {
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), siginfoFields+8))
}

// runsNothing reports whether a process's state letter is one that runs
// nothing: stopped, traced, a zombie, or gone (0).
func runsNothing(state byte) bool {
	return state == 0 || state == 'T' || state == 't' || state == 'Z'
}
