package scope

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
)

// LiveFunc reports whether the process pid, started at start (0: unknown),
// still runs.
type LiveFunc func(pid int, start uint64) bool

// processAlive judges a registry holder: alive unless its pid is dead, a
// zombie, or reused (its start time differs), as internal/proc judges it;
// kill(pid, 0) answering EPERM means alive. A pid below 1 is no holder.
// It reads /proc/<pid>/stat, so a start judges with it only the holders
// whose liveness changes its answer (Table.reclaimFor); every other holder
// gets the seed's kill(pid, 0) (pidPresent).
func processAlive(pid int, start uint64) bool {
	return pid > 0 && proc.Live(pid, start) == proc.Alive
}

// pidPresent is the seed's stale check (stale 検出: kill(pid, 0)): false only
// when no process has the pid (ESRCH); EPERM is a process of another user.
// One system call, no /proc read: it cannot tell a zombie or a reused pid
// from its holder, which processAlive can.
func pidPresent(pid int) bool {
	return pid > 0 && !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
