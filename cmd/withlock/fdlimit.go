package main

import (
	"strings"

	"github.com/withlock/withlock/locks"
)

// reserveDescriptors runs before `run` and `scope` do anything else (SPEC
// §3, scarce resources): with too few open files allowed it ends the run
// with 73 and one line before any lock is taken or command started — never
// a Go runtime crash ("netpollinit failed" under ulimit -n 6) or a lock
// that cannot be released (ulimit -n 9) — and otherwise it sets aside the
// descriptors a release needs, handed back by freeReserve when it runs out.
//
// Every other command only checks that the few descriptors it needs are
// there, for the same one line instead of the runtime's abort.
func reserveDescriptors(args []string) error {
	check := locks.CheckDescriptors
	if supervisesCommand(args) {
		check = locks.ReserveDescriptors
	}
	if err := check(); err != nil {
		return exitWith(exitCantCreate, err)
	}
	return nil
}

// freeReserve hands the reserved descriptors back for the release.
func freeReserve() { locks.FreeReserve() }

// supervisesCommand: the first word that is not a flag is run or scope.
func supervisesCommand(args []string) bool {
	for _, a := range args[min(1, len(args)):] {
		if !strings.HasPrefix(a, "-") {
			return a == "run" || a == "scope"
		}
	}
	return false
}
