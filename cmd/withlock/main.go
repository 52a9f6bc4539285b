// Command withlock takes a lock, runs a command as a supervised child, and
// always cleans up: lock released, the child's process tree gone, the exit
// status passed through.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/withlock/withlock/supervisor"
)

func main() {
	// A signal mask inherited from whoever started us would be passed on to
	// the child; start again without one (see supervisor.ResetSignalMask).
	if err := supervisor.ResetSignalMask(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "withlock: warning:", err)
	}
	if subscribesEarly(os.Args, os.Getenv("WITHLOCK_BACKEND")) {
		// Subscribe to signals while the command line is parsed.
		earlySignals = supervisor.NotifyInBackground()
	}
	os.Exit(Main(os.Args))
}

// subscribesEarly: run and scope with the local lock subscribe to signals in
// the background from the start. Not when another backend may be named: a
// backend that execs another binary must do so before any subscription, or
// a signal caught here would be lost in the exec.
func subscribesEarly(args []string, envBackend string) bool {
	if len(args) < 2 || (args[1] != "run" && args[1] != "scope") {
		return false
	}
	if envBackend != "" && envBackend != "file" {
		return false
	}
	for _, a := range args[2:] {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "--backend") || strings.HasPrefix(a, "-backend") {
			return false
		}
	}
	return true
}

// earlySignals, when main started it, is the signal subscription taken in
// the background at start-up.
var earlySignals func() *supervisor.Signals

// subscribeSignals returns the signal subscription of this run: the one
// main started in the background, else a new one. Either way it is taken
// before the lock wait, so a signal in the wait or during spawn is queued,
// never lost. It is not stopped: the process exits after the run, and each
// unsubscription costs a round trip to Go's signal thread.
func subscribeSignals() *supervisor.Signals {
	if earlySignals != nil {
		return earlySignals()
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
