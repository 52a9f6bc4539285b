// Package testenv holds what tests set in the environment of the processes
// they start.
package testenv

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// GORACE is the GORACE value for a process a test starts: the caller's
// options, without the race runtime's default 1 s sleep at exit, which
// would add a second to every child of a -race test (a race still makes
// the child exit 66 with the report on stderr). An atexit_sleep_ms the
// caller set is kept.
func GORACE() string {
	opts := os.Getenv("GORACE")
	if strings.Contains(opts, "atexit_sleep_ms") {
		return opts
	}
	return strings.TrimSpace(opts + " atexit_sleep_ms=0")
}

// UnignoreSignals undoes, for the processes a test binary starts, the HUP
// and INT ignores it may have inherited (`nohup make test`, `make test &`
// from a script): Go keeps those two ignored, a child would inherit the
// ignore, and rows about signals reaching a command, or about ignores the
// caller gave withlock, could not tell it from withlock's doing. Caught
// (and dropped) here instead, they are at their default in every child,
// as under a plain shell. Signals that were not ignored are left alone.
func UnignoreSignals() {
	for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if signal.Ignored(s) {
			signal.Notify(make(chan os.Signal, 1), s)
		}
	}
}
