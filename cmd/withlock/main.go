// Command withlock takes a lock, runs a command as a supervised child, and
// always cleans up: lock released, the child's process tree gone, the exit
// status passed through.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/supervisor"
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
	code, msg := statusOf(err)
	if msg != "" {
		fmt.Fprintln(os.Stderr, "withlock: "+msg)
	}
	return code
}

// Exit statuses of SPEC §2 that this package sets; the supervisor sets
// the others (76 lock lost, 124 timeout, 126 not executable, 127 not
// found, 128+N the child died of signal N).
const (
	exitUsage      = 64 // EX_USAGE
	exitCantCreate = 73 // EX_CANTCREAT: the lock could not be taken because of an error
	exitTempFail   = 75 // EX_TEMPFAIL: the lock is held by someone else
)

// exitError carries an exit status out of a command; only main exits.
// An empty msg prints nothing (the message was logged already, or -q). A
// non-zero sig asks main to die of that signal, code being the status if
// that fails.
type exitError struct {
	code int
	msg  string
	err  error
	sig  syscall.Signal
}

func (e *exitError) Error() string { return cmp.Or(e.msg, fmt.Sprintf("exit status %d", e.code)) }

func (e *exitError) Unwrap() error { return e.err }

// exitWith ends with code and err's message (err is not nil).
func exitWith(code int, err error) error { return &exitError{code: code, msg: err.Error(), err: err} }

// silentExit ends with code and prints nothing more.
func silentExit(code int) error { return &exitError{code: code} }

// signalStatus is the end of a run whose command died of sig, or whose
// lock wait sig aborted: for SIGINT and SIGQUIT withlock dies of the same
// signal once everything is cleaned up (SPEC §2), so the shell that
// started it sees what a Ctrl-C or Ctrl-\ did and stops its loop (bash
// breaks a loop only for a command killed by SIGINT, not for status 130);
// for any other signal it exits 128+N.
func signalStatus(sig os.Signal) error {
	e := &exitError{code: supervisor.ExitStatusForSignal(sig)}
	if sig == syscall.SIGINT || sig == syscall.SIGQUIT {
		e.sig = sig.(syscall.Signal)
	}
	return e
}

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps an error out of the app to an exit status and a message
// (nil: 0 and none).
// Errors the app did not classify are usage errors from flag parsing, and
// so is an argument locks refused (ErrInvalid), whatever wraps it: its own
// message names it, and never quotes a huge run id whole.
func statusOf(err error) (int, string) {
	if err == nil {
		return 0, ""
	}
	var invalid *locks.InvalidError
	if errors.As(err, &invalid) {
		return exitUsage, invalid.Error()
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.msg
	}
	return exitUsage, err.Error()
}
