// Package oneproc sets GOMAXPROCS to 1 before the rest of withlock
// initialises, and keeps the runtime's own choice for the commands that want
// it back (Restore).
//
// `withlock run` and `withlock scope` keep their threads on one CPU with one
// P (internal/cpupin). Setting the one P here, as the third package init of
// the process (GODEBUG=inittrace=1 shows it), instead of where cpupin pins,
// after the standard library's inits, means those inits allocate into one
// P's cache rather than two: 776 → 689 page faults per `withlock run X --
// true` (perf stat, 100 runs), 0.03–0.05 ms less wall and CPU (interleaved
// A/B, 500–1,000 runs, both binaries installed); under perf the call itself
// drops from 77 to 31 µs a run (perf's own cost included), the faults in
// the central span sets from 63 to 12.
//
// It imports nothing but the runtime, so that it is ready to initialise at
// once: Go initialises, in import-path order, the first package whose imports
// are all initialised, and nearly every package of the standard library
// waits for others. earlysig imports it; integration's
// TestOneprocInitialisesBeforeTheStandardLibrary checks the order.
package oneproc

import "runtime"

// Default is the GOMAXPROCS the runtime chose at start: $GOMAXPROCS, else
// the CPUs withlock may run on, within its cgroup's limit.
var Default = runtime.GOMAXPROCS(1)

// Restore gives GOMAXPROCS back its Default, for a command that does not run
// on one CPU.
func Restore() { runtime.GOMAXPROCS(Default) }
