package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/locks"
)

// runEvents logs the life of one `withlock run` as structured events, one
// line each with an "event" field (see --log-format json): waiting (once,
// when the first wait starts), acquired, released, exit. The other events
// come from where they happen: conflict (run.go), reclaimed and renewed
// (locks), lost, signal forwarding and teardown (supervisor).
type runEvents struct {
	log   zerolog.Logger
	runID string
	start time.Time
	pid   int

	waitOnce sync.Once
}

func newRunEvents(log zerolog.Logger, runID string) *runEvents {
	return &runEvents{log: log, runID: runID, start: time.Now(), pid: os.Getpid()}
}

// onWait logs "waiting" the first time the lock is found held, then hands
// every call on to next (the waiting line).
func (e *runEvents) onWait(next func(*locks.Holder, time.Duration)) func(*locks.Holder, time.Duration) {
	return func(h *locks.Holder, waited time.Duration) {
		e.waitOnce.Do(func() {
			ev := e.log.Info().Str("event", "waiting").Str("run_id", e.runID).Int("pid", e.pid)
			if h != nil {
				ev = ev.Int("holder_pid", h.Pid).Str("holder_host", h.Host).Str("holder_command", h.Command)
				if h.CreatedAt > 0 {
					ev = ev.Dur("held_ms", time.Since(h.Created()))
				}
			}
			ev.Msg("lock held, waiting")
		})
		if next != nil {
			next(h, waited)
		}
	}
}

// wrap returns be with acquired and released logged.
func (e *runEvents) wrap(be backend) backend { return eventBackend{be, e} }

type eventBackend struct {
	backend
	e *runEvents
}

func (b eventBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	lock, err := b.backend.Acquire(ctx, runID, wait)
	if err != nil {
		return lock, err
	}
	e := b.e
	env := envMap(lock.Env())
	token, _ := strconv.ParseUint(env["WITHLOCK_FENCING_TOKEN"], 10, 64)
	e.log.Info().Str("event", "acquired").Str("run_id", runID).Int("pid", e.pid).
		Str("lock_id", env["WITHLOCK_LOCK_ID"]).Uint64("fencing_token", token).
		Dur("waited_ms", time.Since(e.start)).Msg("lock acquired")
	return &eventLock{heldLock: lock, e: e, acquired: time.Now()}, nil
}

type eventLock struct {
	heldLock
	e        *runEvents
	acquired time.Time
}

// Unwrap is the backend's lock, for the optional methods it may have.
func (l *eventLock) Unwrap() heldLock { return l.heldLock }

func (l *eventLock) Release() error {
	err := l.heldLock.Release()
	if err == nil {
		l.e.log.Info().Str("event", "released").Str("run_id", l.e.runID).Int("pid", l.e.pid).
			Dur("held_ms", time.Since(l.acquired)).Msg("lock released")
	}
	return err
}

// exit logs the status withlock is about to exit with.
func (e *runEvents) exit(err error) {
	status := 0
	if err != nil {
		status, _ = statusOf(err)
	}
	e.log.Info().Str("event", "exit").Str("run_id", e.runID).Int("pid", e.pid).
		Int("status", status).Dur("duration_ms", time.Since(e.start)).Msg("exit")
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
