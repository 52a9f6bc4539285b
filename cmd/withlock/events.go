package main

import (
	"errors"
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
//
// With -q a run that ends in a conflict writes nothing at all, in either
// format: no waiting, conflict or exit event (cron mails any output).
// Every "time" is RFC 3339 in UTC with milliseconds.
type runEvents struct {
	log      zerolog.Logger
	runID    string
	start    time.Time
	quiet    bool // -q
	waitOnce sync.Once
	acquire  time.Time // when the lock was granted
	childPid int       // the child's pid once it has been started (for released and exit)
}

// The "time" field of every JSON event: RFC 3339, UTC, milliseconds.
func init() {
	zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
	zerolog.TimestampFunc = func() time.Time { return time.Now().UTC() }
}

// event starts the info event name of this run.
func (e *runEvents) event(name string) *zerolog.Event {
	return e.log.Info().Str("event", name).Str("run_id", e.runID).Int("pid", os.Getpid())
}

// send logs ev, with child_pid once a child has been started.
func (e *runEvents) send(ev *zerolog.Event, msg string) {
	if e.childPid > 0 {
		ev = ev.Int("child_pid", e.childPid)
	}
	ev.Msg(msg)
}

// waiting logs "waiting" the first time the lock is found held (h), not
// with -q: the wait may end in a conflict, which must stay silent.
func (e *runEvents) waiting(h *locks.Holder) {
	e.waitOnce.Do(func() {
		if e.quiet {
			return
		}
		ev := e.event("waiting").Int("holder_pid", h.Pid).Str("holder_host", h.Host).Str("holder_command", h.Command)
		if h.CreatedAt > 0 {
			ev = ev.Dur("held_ms", time.Since(h.Created()))
		}
		ev.Msg("lock held, waiting")
	})
}

// acquired logs the granted lock, named by what it tells the child.
func (e *runEvents) acquired(lock heldLock) {
	e.acquire = time.Now()
	env := map[string]string{}
	for _, kv := range lock.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	token, _ := strconv.ParseUint(env["WITHLOCK_FENCING_TOKEN"], 10, 64)
	e.event("acquired").Str("lock_id", env["WITHLOCK_LOCK_ID"]).Uint64("fencing_token", token).
		Dur("waited_ms", e.acquire.Sub(e.start)).Msg("lock acquired")
}

func (e *runEvents) released() {
	e.send(e.event("released").Dur("held_ms", time.Since(e.acquire)), "lock released")
}

// exit logs the status withlock is about to exit with; with -q, not after
// a conflict.
func (e *runEvents) exit(err error) {
	if e.quiet && errors.Is(err, locks.ErrHeld) {
		return
	}
	status, _ := statusOf(err)
	e.send(e.event("exit").Int("status", status).Dur("duration_ms", time.Since(e.start)), "exit")
}
