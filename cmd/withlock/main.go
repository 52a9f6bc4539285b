// Command withlock takes a lock, runs a command as a supervised child, and
// always cleans up: lock released, the child's process tree gone, the exit
// status passed through.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
)

func main() { exitNow(run(os.Args)) }

// run runs the command line; the context carries args as typed
// (childArgv). Only main (exitNow) turns its error into an exit, so every
// deferred release inside a command runs before the process ends.
func run(args []string) error {
	return newApp().Run(context.WithValue(context.Background(), argsKey{}, args), args)
}

// The subscription to the signals the supervisor forwards (run and scope
// call supervisor.NotifyAsync) is taken before the lock wait, as runc
// subscribes before it waits, so a signal that arrives while waiting or
// during spawn is queued, never lost. It is made on a goroutine of its own, alongside the acquisition;
// every wait and the spawn wait for it first (supervisor.NotifyAsync). It
// is never stopped: the process exits after the run.

// exitNow ends the process with err's status: for main, and for a release
// that never finishes (releaseBounded), which must not keep the process
// alive. For SIGINT and SIGQUIT withlock dies of the signal (see
// signalStatus); dieOf returns only if that did not end it.
func exitNow(err error) {
	code := report(err)
	var ee *exitError
	if errors.As(err, &ee) && ee.sig != 0 {
		dieOf(ee.sig)
	}
	os.Exit(code)
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
