package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/history"
	"github.com/withlock/withlock/supervisor"
)

// Run history (SPEC §8), written by `withlock run` on the file backend:
// a refused start once the acquisition has failed, a start marker once the
// command has been started, and the run's record once the lock has been
// released. Nothing is read, and nothing written, before the command runs;
// a failure to write is one warning line and changes no exit status.

// recordHistory returns be with the run's history written beside its lock.
// Only the file backend keeps history here.
func recordHistory(c *cli.Command, log zerolog.Logger, be backend, runID string, argv []string) backend {
	if c.String("backend") != "file" {
		return be
	}
	h := &runHistory{
		log: log, path: history.File(locks.ResolveDir(c.String("dir"), os.Getenv), runID),
		base: history.Record{RunID: runID, Pid: os.Getpid(), Command: strings.Join(argv, " "), Shared: c.Bool("shared")},
	}
	return historyBackend{be, h}
}

// runHistory is what one `withlock run` writes to its run id's history.
type runHistory struct {
	log  zerolog.Logger
	path string
	base history.Record // the fields every record of this run carries
	warn sync.Once
}

// append writes rec; the first failure is logged, the others are not.
func (h *runHistory) append(rec history.Record) {
	// Another user's history (a shared dir) is theirs: nothing to warn of.
	if err := history.Append(h.path, rec); err != nil && !errors.Is(err, history.ErrForeign) {
		h.warn.Do(func() {
			h.log.Warn().Str("event", "history_failed").Str("run_id", h.base.RunID).Err(err).Msg("run history not written")
		})
	}
}

type historyBackend struct {
	backend
	h *runHistory
}

func (b historyBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	lock, err := b.backend.Acquire(ctx, runID, wait)
	if err != nil {
		if errors.Is(err, locks.ErrHeld) {
			b.h.refused(err, wait)
		}
		return lock, err
	}
	rec := b.h.base
	rec.StartedAt = history.Epoch(time.Now())
	for _, kv := range lock.Env() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "WITHLOCK_FENCING_TOKEN":
			rec.FencingToken, _ = strconv.ParseUint(v, 10, 64)
		case "WITHLOCK_SLOT":
			if slot, err := strconv.Atoi(v); err == nil {
				rec.Slot = &slot
			}
		}
	}
	return &historyLock{heldLock: lock, h: b.h, rec: rec}, nil
}

// refused records a start refused because the lock was held.
func (h *runHistory) refused(err error, wait time.Duration) {
	rec := h.base
	rec.Kind, rec.At, rec.Reason = history.KindRefused, history.Epoch(time.Now()), "conflict"
	if wait != 0 {
		rec.Reason = "wait"
	}
	var held *locks.HeldError
	if errors.As(err, &held) {
		rec.Holder = &history.Holder{Pid: held.Holder.Pid, Host: held.Holder.Host, Command: held.Holder.Command}
	}
	rec.Host, _ = os.Hostname()
	h.append(rec)
}

// historyLock writes the start marker and the run's record.
type historyLock struct {
	heldLock
	h       *runHistory
	rec     history.Record
	started bool // the command was started (or its spawn failed)
}

func (l *historyLock) Unwrap() heldLock { return l.heldLock }

// Heartbeat starts once the command has been forked: the start marker is
// written then, so that a withlock killed meanwhile leaves a run that
// ended unobserved.
func (l *historyLock) Heartbeat() (<-chan error, func()) {
	lost, stop := l.heldLock.Heartbeat()
	l.rec.StartedAt = history.Epoch(time.Now())
	l.rec.Host, _ = os.Hostname()
	l.started = true
	start := l.rec
	start.Kind = history.KindStart
	l.h.append(start)
	return lost, stop
}

// Release writes the run's record once the lock is free.
func (l *historyLock) Release() error {
	err := l.heldLock.Release()
	if l.started && l.rec.Kind == history.KindRun {
		l.rec.EndedAt = history.Epoch(time.Now())
		l.h.append(l.rec)
	}
	return err
}

// noteResult gives the run's record how the command ended.
func noteResult(lock heldLock, res supervisor.Result, err error) {
	for {
		if l, ok := lock.(*historyLock); ok {
			l.setResult(res, err)
			return
		}
		w, ok := lock.(interface{ Unwrap() heldLock })
		if !ok {
			return
		}
		lock = w.Unwrap()
	}
}

func (l *historyLock) setResult(res supervisor.Result, err error) {
	if !l.started {
		l.rec.Host, _ = os.Hostname()
		l.started = true // the spawn failed: a run all the same, with its error
	}
	rec := &l.rec
	rec.Kind, rec.ExitCode = history.KindRun, &res.Status
	switch res.Reason {
	case supervisor.Exited:
		rec.Result = history.ResultExit
	case supervisor.Signaled:
		rec.Result, rec.Signal = history.ResultSignal, unix.SignalName(res.Signal)
	case supervisor.TimedOut:
		rec.Result = history.ResultTimeout
	case supervisor.LockLost:
		rec.Result = history.ResultLockLost
	default:
		rec.Result, rec.Message = history.ResultError, res.Reason.String()
	}
	if err != nil {
		rec.Result, rec.Message = history.ResultError, err.Error()
	}
}

// collectHistory is `gc --history`: it removes the history files of run
// ids that hold no lock and to which nothing was written for olderThan,
// and prints each one (with dryRun: what it would remove).
func collectHistory(dir string, olderThan time.Duration, dryRun, quiet bool) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+history.Suffix))
	if err != nil {
		return err
	}
	var errs []error
	for _, path := range paths {
		if _, err := os.Lstat(strings.TrimSuffix(path, history.Suffix) + ".lock"); err == nil {
			continue // held, or stale: not idle
		}
		removed, err := history.RemoveIdle(path, olderThan, dryRun)
		if err != nil {
			errs = append(errs, err)
		}
		if removed && !quiet {
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			fmt.Printf("%s %s (history)\n", verb, path)
		}
	}
	return errors.Join(errs...)
}
