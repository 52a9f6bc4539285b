package supervisor

import (
	"os"
	"syscall"

	"github.com/withlock/withlock/supervisor/sigsub"
)

// Forwarded are the signals withlock passes on to the child's process group.
var Forwarded = sigsub.Forwarded

// Signals is withlock's subscription to the forwarded signals and SIGCHLD
// (see package sigsub). It is taken at the very start of a run, before the
// lock wait, so that a signal arriving while waiting or while the child is
// being spawned is queued, never lost.
type Signals = sigsub.Subscription

// Notify subscribes, at once, to the forwarded signals.
func Notify() *Signals { return sigsub.Subscribe() }

// ExitStatusForSignal is the shell's status for death by sig: 128+N.
func ExitStatusForSignal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}
