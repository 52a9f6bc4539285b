// Command withlock takes a lock, runs a command as a supervised child, and
// always cleans up: lock released, the child's process tree gone, the exit
// status passed through.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/withlock/withlock/cmd/withlock/internal/earlysig"
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

// subscribeSignals returns the signal subscription of this run: the one
// started during initialisation (package earlysig), else a new one. Either way it is taken
// before the lock wait, so a signal in the wait or during spawn is queued,
// never lost. It is not stopped: the process exits after the run, and each
// unsubscription costs a round trip to Go's signal thread.
func subscribeSignals() *supervisor.Signals {
	if s := earlysig.Take(); s != nil {
		return s
	}
	return supervisor.Notify()
}

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
