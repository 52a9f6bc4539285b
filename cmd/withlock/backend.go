package main

import (
	"context"
	"time"

	"github.com/withlock/withlock/locks"
)

// heldLock is a lock that a backend granted: what the child is told, a
// heartbeat that reports loss, and a release.
type heldLock interface {
	Env() []string
	Heartbeat() (lost <-chan error, stop func())
	Release() error
}

// backend takes run locks. Its Acquire returns an error matching
// locks.ErrHeld (ideally a *locks.HeldError) when the wait ran out,
// locks.ErrUnavailable when the lock could not be taken because of a fault,
// and context.Cause(ctx) when ctx ended.
type backend interface {
	Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error)
}

// fileBackend is the local run lock of SPEC §3.
type fileBackend struct{ locker *locks.RunLocker }

func (b fileBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	l, err := b.locker.Acquire(ctx, runID, wait)
	if err != nil {
		return nil, err
	}
	return l, nil
}
