// Command withlock takes a lock, runs a command as a supervised child, and
// always cleans up: lock released, the child's process tree gone, the exit
// status passed through.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/withlock/withlock/supervisor"
)

func main() {
	code, sig := run(os.Args)
	if sig != 0 {
		dieOf(sig) // returns only if the signal did not end us
	}
	os.Exit(code)
}

// Main runs the command line and returns the exit status. It is the only
// caller of os.Exit's value, so every deferred release inside a command
// runs before the process ends.
func Main(args []string) int {
	code, _ := run(args)
	return code
}

// run runs the command line and returns the exit status and the signal,
// if any, that withlock should die of instead (SIGINT, SIGQUIT: see
// signalStatus). The context carries args as typed (childArgv).
func run(args []string) (int, syscall.Signal) {
	err := newApp().Run(context.WithValue(context.Background(), argsKey{}, args), args)
	return report(err), signalOf(err)
}

// subscribeSignals returns the subscription to the signals the supervisor
// forwards, taken before the lock wait as runc subscribes before it waits,
// so a signal that arrives while waiting or during spawn is queued, never
// lost. It is made on a goroutine of its own, alongside the acquisition;
// every wait and the spawn wait for it first (supervisor.NotifyAsync). It
// is never stopped: the process exits after the run.
func subscribeSignals() *supervisor.Signals { return supervisor.NotifyAsync() }

// exitNow ends the process with err's status, as main does with what run
// returns: for a release that never finishes (releaseBounded), which must
// not keep the process alive.
func exitNow(err error) {
	code := report(err)
	if sig := signalOf(err); sig != 0 {
		dieOf(sig)
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
