// Package reaper makes this process a child subreaper and deals with what its
// children leave behind: it reaps every zombie and finds, signals and waits out
// the descendants that outlive a supervised command (double-forked and setsid'd
// daemons reparent to a subreaper instead of init).
//
// Only Linux has subreapers; elsewhere every function returns an error that
// matches errors.ErrUnsupported.
package reaper

import "errors"

// ErrUnsupported is returned on platforms without PR_SET_CHILD_SUBREAPER.
var ErrUnsupported = errors.ErrUnsupported

// ErrGone reports that a process no longer exists.
var ErrGone = errors.New("process gone")

// Process is one descendant found in /proc. StartTime (clock ticks since boot,
// field 22 of /proc/<pid>/stat) tells it apart from a later process that
// reuses its pid.
type Process struct {
	Pid       int
	PPid      int
	StartTime uint64
}

// Exit is one child reaped by Reap: its pid and wait status.
type Exit struct {
	Pid    int
	Status WaitStatus
}
