// Package supervisor runs withlock's command as a supervised child: in its own
// process group, holding the terminal when withlock had it, or in its
// caller's group when withlock, on a terminal, does not lead one (a script,
// make: the terminal's keys then reach caller and command alike), with
// withlock's signal dispositions, with signals forwarded, a timeout and a lost lock turned
// into TERM → grace → KILL, and — with package reaper — nothing of the
// child's process tree left behind when Run returns.
//
// Only Linux is supported; elsewhere Run and DieWithParent return an error
// matching errors.ErrUnsupported.
package supervisor

import "errors"

var (
	// ErrNotFound: the command does not exist (exit status 127).
	ErrNotFound = errors.New("command not found")
	// ErrNotExecutable: the command exists but cannot be executed (exit status 126).
	ErrNotExecutable = errors.New("command not executable")
	// ErrUnsupported: this platform cannot supervise a child.
	ErrUnsupported = errors.ErrUnsupported
)

// Exit statuses of SPEC §2 that the supervisor decides.
const (
	StatusLockLost      = 76
	StatusTimedOut      = 124
	StatusNotExecutable = 126
	StatusNotFound      = 127
)
