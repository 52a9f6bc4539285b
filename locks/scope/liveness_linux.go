package scope

import (
	"errors"

	"golang.org/x/sys/unix"
)

// pidPresent is the seed's stale check (stale 検出: kill(pid, 0)): false only
// when no process has the pid (ESRCH); EPERM is a process of another user.
// One system call, no /proc read: it cannot tell a zombie or a reused pid
// from its holder, which processAlive can.
func pidPresent(pid int) bool {
	return pid > 0 && !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
