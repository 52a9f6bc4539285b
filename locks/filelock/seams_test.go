package filelock

import (
	"sync"

	"github.com/withlock/withlock/internal/fsys"
)

// lockerKnobs holds each test locker's knobs (seams.go).
var lockerKnobs sync.Map // *RunLocker → *knobs

func init() {
	testKnobs = func(r *RunLocker) *knobs {
		k, _ := lockerKnobs.LoadOrStore(r, &knobs{})
		return k.(*knobs)
	}
}

// knobsOf returns r's knobs for a test to set.
func knobsOf(r *RunLocker) *knobs { return testKnobs(r) }

// osFS is the real filesystem, which the tests' fault injectors wrap.
type osFS = fsys.OS
