package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/supervisor"
)

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

func (e *exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exitError) Unwrap() error { return e.err }

func exitWith(code int, err error) error {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	return &exitError{code: code, msg: msg, err: err}
}

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

// statusOf maps an error out of the app to an exit status and a message.
// Errors the app did not classify are usage errors from flag parsing, and
// so is an argument locks refused (ErrInvalid), whatever wraps it: its own
// message names it, and never quotes a huge run id whole.
func statusOf(err error) (int, string) {
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
