// Package proc reads what withlock needs to know about processes from
// /proc: a pid's state, parent, process group and start time (field 22 of
// /proc/<pid>/stat, which tells a process from a later one reusing its pid),
// this boot's id, the pid namespace /proc shows, the descendants of a pid,
// the members of a process group, and the processes that have a given file
// open. The run lock judges holders with it; the supervisor finds leftovers.
//
// Only Linux is supported (internal/fsys stops other builds).
package proc

// Process is one process as /proc/<pid>/stat shows it.
type Process struct {
	Pid       int
	PPid      int
	Pgrp      int
	State     byte   // field 3: R, S, D, Z, T, …
	StartTime uint64 // field 22: clock ticks since boot
}

// Liveness is what can be said about a pid on this host.
type Liveness int

const (
	Alive  Liveness = iota
	Dead            // no such process, or a zombie
	Reused          // a process has the pid but started at another time
)

// String is the word status shows for a local holder's pid.
func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Dead:
		return "dead"
	default:
		return "pid reused"
	}
}

// FileID names an open file by device and inode, the way /proc/<pid>/fd
// links can be matched to it.
type FileID struct {
	Dev uint64
	Ino uint64
}
