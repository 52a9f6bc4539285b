// Package testenv holds what tests set in the environment of the processes
// they start.
package testenv

import (
	"os"
	"strings"
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
