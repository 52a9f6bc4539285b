package main

import (
	"errors"
	"fmt"
)

// Exit statuses of SPEC §2.
const (
	exitUsage       = 64 // EX_USAGE
	exitCantCreate  = 73 // EX_CANTCREAT: the lock could not be taken because of an error
	exitTempFail    = 75 // EX_TEMPFAIL: the lock is held by someone else
	exitLockLost    = 76
	exitTimeout     = 124
	exitNotExec     = 126
	exitNotFound    = 127
	exitSignalsBase = 128
)

// exitError carries an exit status out of a command; only main exits.
// An empty msg prints nothing (the message was logged already, or -q).
type exitError struct {
	code int
	msg  string
	err  error
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

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps an error out of the app to an exit status and a message.
// Errors the app did not classify are usage errors from flag parsing.
func statusOf(err error) (int, string) {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.msg
	}
	return exitUsage, err.Error()
}
