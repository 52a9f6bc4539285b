package locks

import "errors"

// The run lock's sentinel errors. Callers match them with errors.Is; the
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

	// ErrLost: the lock file is gone or carries another lock_id; we no
	// longer hold the lock.
	ErrLost = errors.New("lock lost")

	// ErrUnsafeDir: the lock directory is a symlink, world-writable or
	// owned by another user.
	ErrUnsafeDir = errors.New("unsafe lock directory")

	// ErrGuardBusy: the per-run-id guard flock was not granted within its
	// bound (a stopped process may hold it). Transient: retried within the
	// wait, then reported as ErrUnavailable naming the guard.
	ErrGuardBusy = errors.New("guard busy")
)
