package reaper

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
)

// StopSignal reports whether pid, a child of this process, is stopped, and
// by which signal (SIGTSTP, SIGTTIN, SIGTTOU for a job-control stop, SIGSTOP
// otherwise). It looks with waitid(WSTOPPED|WNOHANG|WNOWAIT), which takes
// nothing: the stop stays reportable and Reap, which waits for exits only,
// still gets the exit status. A child that is not stopped, or already
// exited, reports false.
func StopSignal(pid int) (syscall.Signal, bool, error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ECHILD) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("waitid %d: %w", pid, err)
		}
		break
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

// State is p's state letter in /proc/<pid>/stat (R, S, D, T, t, Z, …), or 0
// when p is gone or its pid now names another process (a different start
// time).
func State(p Process) byte {
	now, err := proc.Read(p.Pid)
	if err != nil || now.StartTime != p.StartTime {
		return 0
	}
	return now.State
}
