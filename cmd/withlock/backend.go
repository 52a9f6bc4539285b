package main

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
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

// backends maps --backend names to constructors. "file" is registered
// here; other backends register from their own files (see backend_*.go).
// command is the child's command line (recorded for status), onWait is
// called while the lock is held by someone else.
var backends = map[string]func(c *cli.Command, log zerolog.Logger, command string, onWait func(*locks.Holder, time.Duration)) (backend, error){
	"file": newFileBackend,
}

// execBackends are the backends that hand the whole command over to
// another binary (etcd in the default build): run execs it before it
// subscribes to any signal, so none is caught here and lost.
var execBackends = map[string]bool{}

// backendFlag is --backend, shared by run, status and break; one that
// names no backend is a usage error (64).
func backendFlag() cli.Flag {
	names := slices.Sorted(maps.Keys(backends))
	return &cli.StringFlag{Name: "backend", Value: "file", Sources: cli.EnvVars("WITHLOCK_BACKEND"),
		Usage: "where the lock lives: " + strings.Join(names, "|"), Validator: oneOf(names...)}
}

func newFileBackend(c *cli.Command, log zerolog.Logger, command string, onWait func(*locks.Holder, time.Duration)) (backend, error) {
	ttl, err := locks.ResolveTTL(c.Duration("ttl"), os.Getenv)
	if err != nil {
		return nil, usageError("%v", err)
	}
	locker, err := filelock.NewRunLocker(filelock.ResolveDir(c.String("dir"), os.Getenv), ttl)
	if err != nil {
		return nil, exitWith(exitCantCreate, err)
	}
	locker.Command = command
	locker.Log = log
	locker.OnWait = onWait
	return fileBackend{locker: locker, slot: c.IsSet("max") || c.Bool("shared"), max: c.Int("max")}, nil
}

// fileBackend is the local run lock of SPEC §3, or with slot a slot of a
// semaphore (--max: max ≥ 1) or a shared slot (--shared: max 0).
type fileBackend struct {
	locker *filelock.RunLocker
	slot   bool
	max    int
}

func (b fileBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	if b.slot {
		l, err := b.locker.AcquireSlot(ctx, runID, b.max, wait)
		if err != nil {
			return nil, err // not a typed nil
		}
		return l, nil
	}
	start := time.Now()
	l, err := b.locker.Acquire(ctx, runID, wait)
	if err != nil {
		return nil, err
	}
	// Exclusive: with the lock held nobody new takes a shared or semaphore
	// slot of runID; wait for those who have one to leave.
	if err := b.locker.AwaitNoSharers(ctx, l, start, wait); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}
