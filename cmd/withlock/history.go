package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"
	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
	"github.com/withlock/withlock/locks/history"
	"github.com/withlock/withlock/supervisor"
)

// Run history (SPEC §8), written by `withlock run`:
// one append per run, after the lock has been released — the run's record,
// preceded by one "ended unobserved" record for each stale lock (a holder
// killed by SIGKILL) its acquisition reclaimed — or, for a start refused,
// one refused record. Nothing is read on the acquire path; a failure to
// write is one warning line and changes no exit status.

// recordHistory returns be with the run's history written where the
// backend keeps it (historyWriters); be unchanged for one that keeps none.
func recordHistory(c *cli.Command, log zerolog.Logger, be backend, runID string, argv []string) backend {
	writer := historyWriters[c.String("backend")]
	if writer == nil {
		return be
	}
	h := &runHistory{
		log: log, write: writer(c, runID),
		base: history.Record{Run: history.Run{Kind: history.KindRun, RunID: runID, Pid: os.Getpid(), Command: strings.Join(argv, " "), Shared: c.Bool("shared")}},
	}
	if b, ok := be.(fileBackend); ok {
		b.locker.OnReclaim = h.reclaimed
	}
	return historyBackend{be, h}
}

// historyWriters maps a backend to how a run appends records to its run
// id's history: the file backend's is the file beside the lock; etcd's is
// in history_etcd.go.
var historyWriters = map[string]func(c *cli.Command, runID string) func(...history.Record) error{
	"file": func(c *cli.Command, runID string) func(...history.Record) error {
		path := history.File(filelock.ResolveDir(c.String("dir"), os.Getenv), runID)
		return func(recs ...history.Record) error { return history.Append(path, recs...) }
	},
}

// runHistory is what one `withlock run` writes to its run id's history.
type runHistory struct {
	log   zerolog.Logger
	write func(...history.Record) error
	base  history.Record // the fields every record of this run carries
	// unobservedRuns are the runs of the stale locks this run's Acquire
	// reclaimed (its Release, which comes after, writes them).
	unobservedRuns []history.Record
}

// append writes recs in one write(2). A run appends once: at most one
// warning. Another user's history (a shared dir) is theirs: no warning.
func (h *runHistory) append(recs ...history.Record) {
	if err := h.write(recs...); err != nil && !errors.Is(err, history.ErrForeign) {
		h.log.Warn().Str("event", "history_failed").Str("run_id", h.base.RunID).Err(err).Msg("run history not written")
	}
}

// reclaimed notes a stale lock this run's acquisition moved aside: the run
// it names ended unobserved (its withlock was SIGKILLed), and this run's
// append records it.
func (h *runHistory) reclaimed(p locks.Payload) {
	if p.Pid == 0 {
		return // not a payload withlock can name a run by (corrupt, foreign)
	}
	h.unobservedRuns = append(h.unobservedRuns, history.Record{Run: history.Run{Kind: history.KindRun, RunID: h.base.RunID,
		StartedAt: p.CreatedAt, Result: history.ResultUnobserved, Pid: p.Pid, Host: p.Host,
		FencingToken: p.FencingToken, Command: p.Command}})
}

// recordUnobserved writes the record of the run whose lock `break` moved
// aside (id: a run id or a slot's) after its withlock had died: the run
// ended unobserved, and no later acquisition will reclaim the lock to
// record it. A holder that is alive writes its own (lock_lost, or its exit
// after --signal).
func recordUnobserved(c *cli.Command, locker *filelock.RunLocker, id string, p locks.Payload) {
	runID, _, _, _ := locks.ParseSlotRunID(id)
	h := &runHistory{log: locker.Log, write: historyWriters["file"](c, runID), base: history.Record{Run: history.Run{RunID: runID}}}
	if h.reclaimed(p); len(h.unobservedRuns) > 0 {
		h.append(h.unobservedRuns...)
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
	rec.StartedAt = locks.Epoch(time.Now())
	return &historyLock{heldLock: lock, h: b.h, rec: rec}, nil
}

// refused records a start refused because the lock was held, unless by
// another user, or a semaphore's slots by one (in a shared dir the run
// id's history is its holders': creating it as ours would keep their runs
// out of it).
func (h *runHistory) refused(err error, wait time.Duration) {
	rec := h.base
	rec.Kind, rec.At, rec.Reason = history.KindRefused, locks.Epoch(time.Now()), "conflict"
	if wait != 0 {
		rec.Reason = "wait"
	}
	if held, ok := errors.AsType[*locks.HeldError](err); ok {
		if held.Holder.Owner != "" {
			return
		}
		rec.Holder = &history.Holder{Pid: held.Holder.Pid, Host: held.Holder.Host, Command: held.Holder.Command}
	}
	if slots, ok := errors.AsType[*locks.SlotsHeldError](err); ok && slices.ContainsFunc(slots.Holders, func(h locks.Holder) bool { return h.Owner != "" }) {
		return // a semaphore another user holds: as above
	}
	h.append(rec)
}

// historyLock writes the run's record once the lock is free.
type historyLock struct {
	heldLock
	h     *runHistory
	rec   history.Record
	ended bool // noteResult has said how the command ended
}

// Renew is the file lock's renewal, which the supervisor's Verify needs
// (run.go looks for it on the lock it holds): the wrapper must not hide it.
func (l *historyLock) Renew() error {
	if r, ok := l.heldLock.(interface{ Renew() error }); ok {
		return r.Renew()
	}
	return nil
}

func (l *historyLock) Release() error {
	err := l.heldLock.Release() // first: nothing of the history before the next holder's turn
	for _, kv := range l.heldLock.Env() {
		switch k, v, _ := strings.Cut(kv, "="); k {
		case "WITHLOCK_FENCING_TOKEN":
			l.rec.FencingToken, _ = strconv.ParseUint(v, 10, 64)
		case "WITHLOCK_SLOT":
			if slot, err := strconv.Atoi(v); err == nil {
				l.rec.Slot = &slot
			}
		}
	}
	recs := l.h.unobservedRuns
	if l.ended {
		l.rec.EndedAt = locks.Epoch(time.Now())
		l.rec.Host, _ = os.Hostname()
		recs = append(recs, l.rec)
	}
	if len(recs) > 0 {
		l.h.append(recs...)
	}
	return err
}

// results names the ways a command ends in its record; the others are
// errors, with the supervisor's reason as the message.
var results = [...]string{supervisor.Exited: history.ResultExit, supervisor.Signaled: history.ResultSignal,
	supervisor.TimedOut: history.ResultTimeout, supervisor.LockLost: history.ResultLockLost}

// noteResult gives the run's record how the command ended (a lock that
// keeps no history is left alone).
func noteResult(lock heldLock, res supervisor.Result, err error) {
	l, ok := lock.(*historyLock)
	if !ok {
		return
	}
	rec := &l.rec
	l.ended, rec.ExitCode, rec.Result = true, &res.Status, history.ResultError
	if int(res.Reason) < len(results) && err == nil {
		rec.Result = results[res.Reason]
	}
	switch {
	case err != nil:
		rec.Message = err.Error()
	case rec.Result == history.ResultError:
		rec.Message = res.Reason.String()
	case res.Reason == supervisor.Signaled:
		rec.Signal = unix.SignalName(res.Signal)
	}
}

// collectHistory is `gc --history`: it removes the history files of run
// ids that hold no lock and to which nothing was written for olderThan,
// and prints each one (with dryRun: what it would remove).
func collectHistory(dir string, olderThan time.Duration, dryRun, quiet bool) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+history.Suffix))
	var errs []error
	for _, path := range paths {
		if _, err := os.Lstat(strings.TrimSuffix(path, history.Suffix) + ".lock"); err == nil {
			continue // held, or stale: not idle
		}
		removed, err := history.RemoveIdle(path, olderThan, dryRun)
		errs = append(errs, err)
		if removed && !quiet {
			fmt.Printf("%s %s (history)\n", map[bool]string{false: "removed", true: "would remove"}[dryRun], path)
		}
	}
	return errors.Join(append(errs, err)...)
}
