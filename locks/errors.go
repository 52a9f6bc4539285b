package locks

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The sentinel errors of every backend's run lock. Callers match them with errors.Is; the
// command line maps each to an exit status (SPEC §2).
var (
	// ErrHeld: someone else holds the lock. It is a result, not a fault:
	// TryAcquire reports it through its Holder return, Acquire wraps it in
	// a *HeldError once the wait runs out.
	ErrHeld = errors.New("lock held by another process")

	// ErrUnavailable: the lock could not be taken because of an error that
	// is not contention (directory unusable, guard stuck, hostile file at
	// the lock path), after bounded retries.
	ErrUnavailable = errors.New("lock unavailable")

	// ErrLost: we no longer hold the lock: its file is gone or carries
	// another lock_id, or its etcd lease or key is gone.
	ErrLost = errors.New("lock lost")
)

// HeldError is returned by Acquire when the wait ran out with the lock
// still held. It matches ErrHeld.
type HeldError struct {
	RunID  string
	Holder Holder
	At     time.Time
}

func (e *HeldError) Error() string {
	verb := "locked"
	if e.Holder.Orphaned {
		verb = "held"
	}
	return fmt.Sprintf("run %q is %s by %s", e.RunID, verb, e.Holder.Describe(e.At))
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// ErrModeMismatch: a run id is held as a semaphore of another size, or as a
// semaphore by one side and a shared lock by the other. It is a usage
// error, not contention: waiting would not make the two agree.
var ErrModeMismatch = errors.New("holders disagree about the lock's mode")

// MismatchError names both sides of a mode disagreement by their flags
// ("--max 3", "--shared").
type MismatchError struct {
	RunID      string
	Want, Have string
	Holder     Holder
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("run %q: %s disagrees with %s of its running holders (pid %d)", e.RunID, e.Want, e.Have, e.Holder.Pid)
}

func (e *MismatchError) Unwrap() error { return ErrModeMismatch }

// SlotsHeldError: every slot of a semaphore stayed held until the wait ran
// out. It matches ErrHeld.
type SlotsHeldError struct {
	RunID   string
	Max     int
	Holders []Holder
}

func (e *SlotsHeldError) Error() string {
	var pids []string
	for _, h := range e.Holders {
		pid := strconv.Itoa(h.Pid)
		if h.Orphaned {
			pid = h.orphanText()
		}
		pids = append(pids, pid)
	}
	return fmt.Sprintf("run %q: all %d slots are held (pids %s)", e.RunID, e.Max, strings.Join(pids, ", "))
}

func (e *SlotsHeldError) Unwrap() error { return ErrHeld }

// flag is how the command line asks for a mode: --shared, or --max N
// (N 0: --shared).
func flag(max int) string {
	if max == 0 {
		return "--shared"
	}
	return "--max " + strconv.Itoa(max)
}

// MaxMismatch is the error of a --max want against running holders of
// --max have (either 0: --shared).
func MaxMismatch(runID string, want, have int, holder Holder) error {
	return &MismatchError{RunID: runID, Want: flag(want), Have: flag(have), Holder: holder}
}
