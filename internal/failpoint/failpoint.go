// Package failpoint is withlock's one seam for failure injection. The
// integration suite runs the binary users install with WITHLOCK_FAILPOINTS
// set to a comma-separated list of names (and name=value pairs); the code
// at each named point asks On(name). Unset, as in every real run, each
// point costs one comparison with the empty string.
//
// The names, and what each takes away, are the constants below. A negative
// control of the suite sets one, and its row must then fail.
package failpoint

import (
	"os"
	"strings"
)

// Env is the environment variable the points are read from.
const Env = "WITHLOCK_FAILPOINTS"

const (
	// Crash=<point> SIGKILLs withlock at the named point of a state
	// transition (see At); Hang=<point> blocks there for ever, as a
	// system call on a hung filesystem would.
	Crash = "crash"
	Hang  = "hang"
	// BrokenLockID: renew and release skip their check that the lock
	// file still carries their lock_id.
	BrokenLockID = "broken-lockid"
	// NoTree: acquisitions take no tree file, so the lock no longer
	// outlives withlock in its command's surviving processes.
	NoTree = "no-tree"
	// TrustForeignProc: proc.View trusts a /proc of another pid namespace.
	TrustForeignProc = "trust-foreign-proc"
	// CollectAnyOwner: gc tries to remove other users' leftovers in a
	// shared dir.
	CollectAnyOwner = "collect-any-owner"
	// BrokenSlots: each acquisition of a slot gets a lock of its own, and
	// an exclusive holder does not wait for the shared holders.
	BrokenSlots = "broken-slots"
	// NoSubreaper: the supervisor is no subreaper and leaves leftovers.
	NoSubreaper = "no-subreaper"
	// OwnGroup: the supervisor gives its command a process group of its
	// own (and the terminal) even when withlock shares its caller's group
	// on a terminal, so the caller no longer sees the terminal's signals.
	OwnGroup = "own-group"
	// SlowSubscribe holds the signal subscription back 300 ms.
	SlowSubscribe = "slow-subscribe"
	// WaitUnsubscribed lets a lock wait block before the signal
	// subscription is in place.
	WaitUnsubscribed = "wait-unsubscribed"
	// TornHistory writes each history line in two write(2) calls, so
	// that concurrent writers can interleave them.
	TornHistory = "torn-history"
)

var points = os.Getenv(Env)

// Value returns the value of the named point and whether it is set.
func Value(name string) (string, bool) {
	if points == "" {
		return "", false
	}
	for _, p := range strings.Split(points, ",") {
		if k, v, _ := strings.Cut(p, "="); k == name {
			return v, true
		}
	}
	return "", false
}

// On reports whether the named point is set.
func On(name string) bool {
	_, ok := Value(name)
	return ok
}

// Armed reports whether Crash or Hang names point.
func Armed(point string) bool {
	c, _ := Value(Crash)
	h, _ := Value(Hang)
	return c == point || h == point
}

// At marks a named point of a state transition (acquire:after-temp,
// acquire:after-link, renew:after-temp, reclaim:after-rename,
// tree:after-create, scope:mid-write, the *:verified points of renew and
// release): withlock dies there when Crash names it and hangs when Hang
// does.
func At(point string) {
	if points == "" {
		return
	}
	if v, _ := Value(Crash); v == point {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
		select {} // never returns: KILL is on its way
	}
	if v, _ := Value(Hang); v == point {
		select {}
	}
}
