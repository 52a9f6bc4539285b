package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
	"github.com/withlock/withlock/locks/scope"
)

// defaultBreakGrace outlasts the holder's own default teardown grace (10s),
// so a holder that tears its child down TERM → KILL has time to release.
const defaultBreakGrace = 15 * time.Second

func breakCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.BoolFlag{Name: "force", Usage: "move the lock aside even when its holder is alive or cannot be judged"},
		&cli.BoolFlag{Name: "signal", Usage: "send TERM to a live holder on this host, wait --grace for it to release, then break"},
		&durFlag{Name: "grace", Value: defaultBreakGrace, Usage: "with --signal: how long the holder may take to release: `DUR` in seconds or a duration (30s)"},
		&cli.IntFlag{Name: "slot", Usage: "break only slot `K` of a semaphore or shared lock (default: RUN_ID's own lock and every slot)"},
		&cli.BoolFlag{Name: "scopes", Usage: "instead of a run lock: move a corrupt scope registry aside (scope.lock.corrupt.<ts>)"},
		scopeFileFlag(),
	}
	return &cli.Command{
		Name:      "break",
		Usage:     "move a run lock aside (to <lock>.stale.<ts>) so the run id is free",
		ArgsUsage: "RUN_ID | --scopes",
		Description: `Moves the lock of RUN_ID aside, never over an earlier stale file; the
fencing counter stays. Exits 0 moved, released or none; 75 refused; 73
could not read or move. Details: withlock(1).

Examples:
   withlock break nightly-backup
   withlock break --signal --grace 30s r-42
   withlock break --force r-42     # holder alive or on another host: you decide
   withlock break --slot 2 builds  # one slot of run --max N builds
   withlock break --scopes         # a corrupt scope registry`,
		Flags:  lockFlags(flags, logFlags()),
		Action: breakAction,
	}
}

func breakAction(_ context.Context, c *cli.Command) error {
	if c.Bool("scopes") {
		return breakScopes(c)
	}
	if c.NArg() != 1 || c.Args().First() == "" {
		return usageError("break: want exactly one RUN_ID (usage: withlock break [flags] RUN_ID, or withlock break --scopes)")
	}
	runID := c.Args().First()
	if c.String("backend") == "etcd" {
		return etcdBreak(c, runID)
	}
	locker, err := filelock.NewRunLocker(filelock.ResolveDir(c.String("dir"), os.Getenv), locks.DefaultTTL)
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	locker.Log = newLogger(c, os.Stderr)
	out := newSayer(c)

	mode, max, slots, found, err := locker.SlotsOf(runID)
	if err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("break %q: %w", runID, err))
	}
	targets, err := slotTargets(c, runID, mode, max, slots, found)
	if err != nil {
		return err
	}
	var first error
	for _, id := range targets {
		// A semaphore's free slots are not worth a line each.
		if err := breakOne(c, locker, id, out.say, len(targets) > 1); err != nil && first == nil {
			first = err
		}
	}
	if first == nil && !out.said {
		out.say("no lock for run %q", runID)
	}
	return first
}

// sayer prints break's lines on stdout (none with -q) and remembers
// whether there was one.
type sayer struct {
	w           io.Writer
	quiet, said bool
}

func newSayer(c *cli.Command) *sayer { return &sayer{w: c.Root().Writer, quiet: c.Bool("quiet")} }

func (s *sayer) say(format string, args ...any) {
	s.said = true
	if !s.quiet {
		fmt.Fprintf(s.w, format+"\n", args...)
	}
}

// breakScopes is `withlock break --scopes`: a corrupt scope registry is
// moved aside (scope.Registry.Reset).
func breakScopes(c *cli.Command) error {
	if c.NArg() > 0 {
		return usageError("break --scopes: takes no RUN_ID (got %q)", c.Args().Slice())
	}
	path := scope.FilePath(c.String("scope-file"), os.Getenv)
	moved, err := (&scope.Registry{Path: path}).Reset(context.Background())
	out := newSayer(c)
	for _, to := range moved {
		out.say("moved aside to %s", to)
	}
	if err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("break --scopes: %w", err))
	}
	if len(moved) == 0 {
		out.say("%s loads; nothing to move aside", path)
	}
	return nil
}

// breakOne breaks the lock of id (a run id or a slot's derived id);
// quietFree says nothing when there is no lock.
func breakOne(c *cli.Command, locker *filelock.RunLocker, runID string, say func(string, ...any), quietFree bool) error {
	b, err := locker.Break(runID, c.Bool("force"), "")
	var live *filelock.LiveHolderError
	how := "" // how an orphaned holder's tree was ended
	if errors.As(err, &live) && c.Bool("signal") {
		b, how, err = signalThenBreak(locker, live, c.Duration("grace"))
	}
	if err == nil && (how != "" || b.Reason == filelock.StaleDead || b.Reason == filelock.StaleReused || b.Reason == filelock.StaleTreeEnded) {
		recordUnobserved(c, locker, runID, b.Holder.Payload) // its withlock died: nobody else writes its record
	}
	switch {
	case err == nil && how != "":
		say("ended the command of %s (%s) and moved its lock aside: %s", slotName(runID), how, b.MovedTo)
		return nil
	case errors.Is(err, errReleased):
		say("pid %d released the lock of %s after SIGTERM", live.Holder.Pid, slotName(runID))
		return nil
	case errors.Is(err, filelock.ErrNoLock):
		if !quietFree {
			say("no lock for %s", slotName(runID))
		}
		return nil
	case errors.As(err, &live):
		return exitWith(exitTempFail, fmt.Errorf("break: %s; %s", slotText(live.Error(), runID), breakHint(live)))
	case err != nil:
		return exitWith(exitCantCreate, fmt.Errorf("break %s: %w", slotName(runID), err))
	}
	why := cmp.Or(string(b.Reason), "forced") // NotStale is ""
	say("moved the lock of %s aside (%s; was %s): %s", slotName(runID), why, b.Holder.Describe(time.Now()), b.MovedTo)
	return nil
}

// breakHint says what the user may do about a refusal.
func breakHint(live *filelock.LiveHolderError) string {
	if live.Holder.Orphaned {
		return "its holder is dead but its command still runs and holds the lock; --signal ends that command (TERM, --grace, KILL) and frees the lock"
	}
	if live.Holder.Local {
		return fmt.Sprintf("--signal asks pid %d to stop first, --force moves the lock anyway", live.Holder.Pid)
	}
	return "--force moves the lock anyway"
}

// errReleased: after --signal's TERM the holder released the lock itself.
var errReleased = errors.New("released by its holder")

// treeKillWait bounds the wait for an orphaned tree to let go of its tree
// file after KILL: a process in uninterruptible sleep exits only when its
// system call returns.
const treeKillWait = 10 * time.Second

// signalThenBreak sends TERM to a live holder on this host, or to the
// command tree of an orphaned one (holder dead, command still running:
// every process that holds the tree file and their process groups'
// members), waits up to grace for the lock to be released or turn stale,
// sends KILL to what is left of an orphaned tree, and then moves aside the
// lock of that acquisition if it is still there (Break with its lock id: a new
// holder's is left alone). A holder that ended before the signal is not
// signalled (its pid may be another process's). It reports how an
// orphaned tree was ended ("" for a holder); errReleased when the holder
// released the lock itself.
func signalThenBreak(locker *filelock.RunLocker, live *filelock.LiveHolderError, grace time.Duration) (*filelock.Broken, string, error) {
	h := live.Holder
	how := ""
	switch {
	case h.Orphaned && !h.PidsKnown:
		return nil, "", fmt.Errorf("%v: its command's pids cannot be found in /proc, so it cannot be signalled from here", live)
	case h.Orphaned:
		how = fmt.Sprintf("pids %s: TERM", joinPids(h.Pids))
		signalTree(h.Pids, syscall.SIGTERM)
	case !h.Local:
		return nil, "", live // nothing we can signal from here
	default:
		if err := proc.Signal(h.Pid, h.PidStart, syscall.SIGTERM); err != nil {
			return nil, "", fmt.Errorf("signal pid %d: %w", h.Pid, err)
		}
	}
	// A live holder that outlives grace has its lock broken from under it
	// (its heartbeat then finds the lock lost); an orphaned tree gets KILL.
	if err := locker.AwaitRelease(live.RunID, h.LockID, grace); err != nil && h.Orphaned {
		how += ", then KILL after " + grace.String()
		filelock.FindPids(&h)
		signalTree(h.Pids, syscall.SIGKILL)
		if err := locker.AwaitRelease(live.RunID, h.LockID, treeKillWait); err != nil {
			return nil, "", fmt.Errorf("run %q: its command's tree (pids %s) still holds the lock %v after KILL", live.RunID, joinPids(h.Pids), treeKillWait)
		}
	}
	b, err := locker.Break(live.RunID, true, h.LockID)
	if errors.Is(err, filelock.ErrNoLock) {
		return nil, "", errReleased
	}
	return b, how, err
}

// signalTree sends sig to each pid that is still there; the pids are
// those the holder's tree had when last found (filelock.FindPids).
func signalTree(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		proc.Signal(pid, 0, sig)
	}
}

// joinPids is "123 124 125".
func joinPids(pids []int) string { return strings.Trim(fmt.Sprint(pids), "[]") }
