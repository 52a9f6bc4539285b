// Command withlock takes a lock, runs a command as a supervised child, and
// always cleans up: lock released, the child's process tree gone, the exit
// status passed through.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/withlock/withlock/supervisor"
)

func main() {
	// A signal mask inherited from whoever started us would be passed on to
	// the child; start again without one (see supervisor.ResetSignalMask).
	if err := supervisor.ResetSignalMask(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "withlock: warning:", err)
	}
	os.Exit(Main(os.Args))
}

// subscribeSignals subscribes to the signals the supervisor forwards. A run
// takes it before the lock wait, as runc subscribes before it waits, so a
// signal that arrives while waiting or during spawn is queued, never lost.
// It is not stopped: the process exits after the run.
func subscribeSignals() *supervisor.Signals { return supervisor.Notify() }

// Main runs the command line and returns the exit status. It is the only
// caller of os.Exit's value, so every deferred release inside a command
// runs before the process ends.
func Main(args []string) int {
	app := newApp()
	err := app.Run(reorderArgs(app, args))
	return report(err)
}

// report prints err (unless it asks for silence) and returns its status.
func report(err error) int {
	if err == nil {
		return 0
	}
	code, msg := statusOf(err)
	if msg != "" {
		fmt.Fprintln(os.Stderr, "withlock: "+msg)
	}
	return code
}
