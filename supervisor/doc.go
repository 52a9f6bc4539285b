// Package supervisor runs withlock's command as a supervised child: in its
// own process group, holding the terminal when withlock had it, or in its
// caller's group when withlock, on a terminal, does not lead one (a script,
// make: the terminal's keys then reach caller and command alike), with
// withlock's signal dispositions, with signals forwarded, and a timeout and
// a lost lock turned into TERM → grace → KILL.
//
// It is also the reaper: withlock is a child subreaper while Run runs, so
// double-forked and setsid'd descendants reparent to it instead of init;
// every zombie is reaped, and the descendants that outlive the command are
// found in /proc, signalled by pidfd and waited out, so nothing of the
// child's process tree is left behind when Run returns.
//
// Only Linux is supported (internal/fsys stops other builds).
package supervisor

import "errors"

var (
	// ErrNotFound: the command does not exist (exit status 127).
	ErrNotFound = errors.New("command not found")
	// ErrNotExecutable: the command exists but cannot be executed (exit status 126).
	ErrNotExecutable = errors.New("command not executable")
)

// Exit statuses of SPEC §2 that the supervisor decides.
const (
	StatusLockLost      = 76
	StatusTimedOut      = 124
	StatusNotExecutable = 126
	StatusNotFound      = 127
)
