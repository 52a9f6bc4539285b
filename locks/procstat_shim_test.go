package locks

import "github.com/withlock/withlock/internal/proc"

// procStat keeps scope_proc_linux_test.go (helper "scope"'s file, moving to
// locks/scope) compiling now that /proc is read by internal/proc.
func procStat(pid int) (state byte, start uint64, err error) {
	p, err := proc.Read(pid)
	return p.State, p.StartTime, err
}
