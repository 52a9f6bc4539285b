// Package earlysig starts withlock's signal subscription during package
// initialisation, for `withlock run` and `withlock scope`, and first keeps
// the process on one CPU (internal/cpupin), so that the subscription's round
// trips, and every later hand-off between threads, stay on that CPU.
//
// Subscribing costs eight round trips to Go's signal thread (about 0.11 ms
// on one CPU of a small VM), and the subscription must be complete before
// the lock wait starts. It is begun here, on a goroutine, right after
// os/signal is initialised. With one P that goroutine runs only once main
// blocks, in practice in Take, so it overlaps little; subscribing right here
// instead measured 0.15 ms slower. main imports this package for that side
// effect and collects the subscription with Take.
//
// Every other command gets the GOMAXPROCS the runtime chose back
// (cmd/withlock/internal/oneproc set 1 before any of this).
package earlysig

import (
	"os"
	"strings"

	"github.com/withlock/withlock/cmd/withlock/internal/oneproc"
	"github.com/withlock/withlock/internal/cpupin"
	"github.com/withlock/withlock/supervisor/sigsub"
)

var pending func() *sigsub.Subscription

func init() { start(os.Args, os.Getenv("WITHLOCK_BACKEND")) }

func start(args []string, envBackend string) {
	if Applies(args, envBackend) && maskClear() {
		// Pinned first: the threads the subscription creates inherit it.
		if !cpupin.Start() {
			oneproc.Restore() // several CPUs, but no pin: use them
		}
		pending = sigsub.InBackground()
		return
	}
	oneproc.Restore()
}

// Take returns the subscription started during initialisation, waiting for
// it to complete, or nil when none was started.
func Take() *sigsub.Subscription {
	if pending == nil {
		return nil
	}
	return pending()
}

// Applies reports whether the command line subscribes early: run and scope
// with the local lock. Not when another backend may be named: a backend that
// execs another binary must do so before any subscription, or a signal caught
// here would be lost in the exec.
func Applies(args []string, envBackend string) bool {
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
