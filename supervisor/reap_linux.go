package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setSubreaper marks this process as a child subreaper (on=1) or clears
// the mark (on=0): orphaned descendants (double-forked, setsid'd daemons)
// then reparent to us instead of init.
func setSubreaper(on uintptr) error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, on, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_CHILD_SUBREAPER: %w", err)
	}
	return nil
}

// runsNothing reports whether a process's state letter is one that runs
// nothing: stopped, traced, a zombie, or gone (0).
func runsNothing(state byte) bool {
	return state == 0 || state == 'T' || state == 't' || state == 'Z'
}
