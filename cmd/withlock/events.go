package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/locks"
)

// runEvents logs the life of one `withlock run` as structured events, one
// line each with an "event" field (see --log-format json): waiting (once,
// when the first wait starts), acquired, released, exit. The other events
// come from where they happen: conflict (run.go), reclaimed and renewed
// (locks), lost, signal forwarding and teardown (supervisor).
//
// With -q a run that ends in a conflict writes nothing at all, in either
// format: no waiting, conflict or exit event (cron mails any output).
// Every "time" is RFC 3339 in UTC with milliseconds (jsonTimeFormat).
type runEvents struct {
	log   zerolog.Logger
	runID string
	start time.Time
	pid   int
	quiet bool // -q

	waitOnce sync.Once
	held     atomic.Bool  // the acquisition ended in a conflict
	childPid atomic.Int64 // the child's pid once it has been started
}

// jsonTimeFormat is the layout of the "time" field of every JSON event.
const jsonTimeFormat = "2006-01-02T15:04:05.000Z07:00"

func init() {
	zerolog.TimeFieldFormat = jsonTimeFormat
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
}

func newRunEvents(log zerolog.Logger, runID string, quiet bool) *runEvents {
	return &runEvents{log: log, runID: runID, start: time.Now(), pid: os.Getpid(), quiet: quiet}
}

// onWait logs "waiting" the first time the lock is found held (not with
// -q: the wait may end in a conflict, which must stay silent), then hands
// every call on to next (the waiting line).
func (e *runEvents) onWait(next func(*locks.Holder, time.Duration)) func(*locks.Holder, time.Duration) {
	return func(h *locks.Holder, waited time.Duration) {
		e.waitOnce.Do(func() {
			if e.quiet {
				return
			}
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
		if errors.Is(err, locks.ErrHeld) {
			b.e.held.Store(true)
		}
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
		l.e.withChild(l.e.log.Info().Str("event", "released").Str("run_id", l.e.runID).Int("pid", l.e.pid).
			Dur("held_ms", time.Since(l.acquired))).Msg("lock released")
	}
	return err
}

// noteChild records the pid of the child started under lock, for the
// events after spawn (the supervisor's own carry child_pid already).
func noteChild(lock heldLock, pid int) {
	if l, ok := lock.(*eventLock); ok && pid > 0 {
		l.e.childPid.Store(int64(pid))
	}
}

// withChild adds child_pid to ev once a child has been started.
func (e *runEvents) withChild(ev *zerolog.Event) *zerolog.Event {
	if pid := e.childPid.Load(); pid > 0 {
		ev = ev.Int64("child_pid", pid)
	}
	return ev
}

// exit logs the status withlock is about to exit with; with -q, not after
// a conflict.
func (e *runEvents) exit(err error) {
	if e.quiet && e.held.Load() {
		return
	}
	status := 0
	if err != nil {
		status, _ = statusOf(err)
	}
	e.withChild(e.log.Info().Str("event", "exit").Str("run_id", e.runID).Int("pid", e.pid).
		Int("status", status).Dur("duration_ms", time.Since(e.start))).Msg("exit")
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
