package filelock

import (
	"time"

	"github.com/withlock/withlock/internal/failpoint"
)

// knobs are what this package's tests change in a RunLocker to pause it at
// a point, or to take a safeguard away and show the race it prevents. They
// live outside RunLocker: testKnobs is nil in every real run, and the tests
// set it (seams_test.go) to look a locker's knobs up.
type knobs struct {
	// hook is called at named points of a state transition, so a test can
	// pause one locker there and race another.
	hook func(point string)
	// unserialised skips the guard and the post-move ownership check: the
	// races they prevent must then show (negative controls).
	unserialised bool
	// noHold neither takes the hold nor queues for it (hold.go): every
	// waiter watches the directory.
	noHold bool
	// holdPoll, when set, replaces defaultHoldPoll.
	holdPoll time.Duration
	// noTree takes no tree file (tree.go): lockers in one test process
	// share its pid and its descriptors, so only the TTL can free the lock
	// one of them abandons.
	noTree bool
}

var testKnobs func(*RunLocker) *knobs

func (r *RunLocker) knobs() *knobs {
	if testKnobs == nil {
		return &noKnobs
	}
	return testKnobs(r)
}

var noKnobs knobs

// at marks a named point of a state transition: a crash point of the
// integration suite's crash build, and a pause point of this package's
// race tests.
func (r *RunLocker) at(point string) {
	failpoint.At(point)
	if testKnobs != nil {
		if h := testKnobs(r).hook; h != nil {
			h(point)
		}
	}
}
