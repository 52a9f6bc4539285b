package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
	"github.com/withlock/withlock/locks/scope"
	"github.com/withlock/withlock/supervisor"
)

func runCommand() *cli.Command {
	ttl := &durFlag{Name: "ttl", Usage: "lock lifetime without renewal: `DUR` in seconds or a duration (default: $WITHLOCK_TTL, else $NEXUSCORE_RUN_LOCK_TTL_SECONDS, else 30s)",
		Validator: check(func(d time.Duration) bool { return d > 0 }, "must be positive")}
	return &cli.Command{
		Name:      "run",
		Usage:     "hold the run lock of RUN_ID while COMMAND runs",
		ArgsUsage: "RUN_ID [options] [--] COMMAND [ARGS...]",
		// Flags before RUN_ID or between RUN_ID and COMMAND (SPEC §1): the
		// words from COMMAND's second on are never read as withlock's.
		StopOnNthArg: new(2), // RUN_ID and COMMAND's first word
		Description: `At most one holder per RUN_ID at a time. Exits 75 at once when the lock is
held (or after --wait), 73 when it cannot be taken because of an error, and
otherwise with the command's own status (128+N when it died of signal N).

Examples:
   withlock run nightly-backup -q --conflict-exit-code 0 -- /usr/local/bin/backup
   withlock run r-42 --wait 30s -- resume-run r-42`,
		Flags:  lockFlags([]cli.Flag{ttl}, semFlags(), superviseFlags(), logFlags()),
		Action: runAction,
	}
}

// argsKey is the context key of the command line as typed (main.go).
type argsKey struct{}

// childArgv is the command to run: c's arguments after the first n
// (RUN_ID). urfave/cli hands the words after the command's first word on
// as typed, but for a "--" right after it, which it takes for the end of
// withlock's flags (it looks for "--" before it counts StopOnNthArg's
// arguments): that one is put back from the command line as typed, so
// `withlock run job echo -- x` prints "-- x".
func childArgv(ctx context.Context, c *cli.Command, n int) []string {
	argv := c.Args().Slice()[min(n, c.NArg()):]
	typed, _ := ctx.Value(argsKey{}).([]string)
	if i := len(typed) - len(argv); len(argv) > 0 && i > 0 && strings.TrimSpace(argv[0]) != "--" && strings.TrimSpace(typed[i]) == "--" {
		argv = append([]string{argv[0], "--"}, argv[1:]...)
	}
	return argv
}

// splitRunArgs takes RUN_ID and COMMAND [ARGS...] apart. In `withlock run
// -- ID -- cmd` the first "--" ends withlock's flags (urfave/cli takes it
// out) and the second, typed right after RUN_ID, is the optional one before
// COMMAND; in `withlock run ID -- -- cmd` COMMAND is "--".
func splitRunArgs(ctx context.Context, c *cli.Command) (string, []string, error) {
	runID, argv := c.Args().First(), childArgv(ctx, c, 1)
	typed, _ := ctx.Value(argsKey{}).([]string)
	if i := len(typed) - len(argv) - 1; len(argv) > 1 && argv[0] == "--" && i >= 0 && typed[i] == runID {
		argv = argv[1:]
	}
	switch {
	case c.NArg() == 0:
		return "", nil, usageError("run: missing RUN_ID (usage: withlock run [flags] RUN_ID [--] COMMAND [ARGS...])")
	case runID == "":
		return "", nil, usageError("run: empty RUN_ID")
	case len(argv) == 0:
		return "", nil, usageError("run: missing COMMAND after RUN_ID %q", runID)
	}
	return runID, argv, nil
}

func runAction(ctx context.Context, c *cli.Command) error {
	line := newWaitLine(os.Stderr, c.Args().First(), c.Bool("quiet"))
	log := newLogger(c, line)
	if err := checkSlotFlags(c); err != nil {
		return err
	}
	// An exec backend (withlock-etcd) takes over before any signal is
	// caught here: one that arrives meanwhile acts as on withlock-etcd.
	if execBackends[c.String("backend")] {
		_, err := backends[c.String("backend")](c, log, "", nil)
		return err // only on failure: on success the process is another binary
	}
	// Subscribed before the lock wait blocks and before the spawn: a signal
	// that arrives while we wait for the lock or while the child is being
	// spawned is queued, not lost.
	sigs := supervisor.NotifyAsync() // see main.go

	runID, argv, err := splitRunArgs(ctx, c)
	if err != nil {
		return err
	}
	if c.String("backend") != "file" {
		sigs.Wait() // a remote backend's wait may block before it reports it
	}
	events := &runEvents{log: log, runID: runID, start: time.Now(), quiet: c.Bool("quiet")} // waiting, acquired, released, exit (events.go)
	be, err := backends[c.String("backend")](c, log, strings.Join(argv, " "), func(h *locks.Holder, waited time.Duration) {
		// The wait blocks only once the subscription is in place, so that
		// the "waiting" event and line mean a signal now ends the wait
		// cleanly.
		if !failpoint.On(failpoint.WaitUnsubscribed) {
			sigs.Wait()
		}
		events.waiting(h)
		line.Update(h, waited)
	})
	if err != nil {
		return err
	}
	be = recordHistory(c, log, be, runID, argv) // history.go
	err = superviseUnderLock(c, log, sigs, events, be, runID, argv, line.Done)
	events.exit(err)
	return err
}

// superviseUnderLock is the life of `withlock run` and `withlock scope`
// once flags are parsed: wait for the lock (a signal aborts the wait), run
// the child with a heartbeat, release, and pass the status through. id
// names the lock in logs (run id or scope name); events logs the run's
// life (scope's log nowhere).
func superviseUnderLock(c *cli.Command, log zerolog.Logger, sigs *supervisor.Signals, events *runEvents,
	be backend, id string, argv []string, afterWait func()) (result error) {
	if c.Bool("die-with-parent") {
		if err := supervisor.DieWithParent(); err != nil {
			return exitWith(exitCantCreate, fmt.Errorf("--die-with-parent: %w", err))
		}
	}
	// A run that may wait looks the command up before the wait, off the
	// hand-off's path (the child's PATH is ours: childEnv adds only
	// WITHLOCK_ variables); one that does not wait leaves it to the spawn,
	// so a conflict (75) costs no lookup. One not found is reported as
	// before, by the spawn under the lock.
	var path string
	if c.Duration("wait") != 0 {
		path, _ = supervisor.LookPath(argv[0], os.Environ())
	}
	lock, err := acquireInterruptible(sigs, be, id, c.Duration("wait"))
	afterWait()
	if err != nil {
		return acquireFailure(c, log, id, err)
	}
	if named, ok := lock.(interface{ Name() string }); ok {
		id = named.Name() // a scope's name is known once it is registered
	}
	events.acquired(lock)
	// The child's environment is read before the heartbeat starts: a
	// renewal rewrites the lock's payload. The heartbeat starts once the
	// child is forked (Watch), off the way from the lock to the command;
	// its first renewal is a third of the TTL away.
	env := childEnv(os.Environ(), lock.Env())
	stopHeartbeat := func() {}
	defer func() {
		stopHeartbeat()
		if releaseBounded(log, id, lock, func() { exitNow(result) }) {
			events.released()
		}
	}()

	// The supervisor's Verify is the lock's renewal, which fails with
	// locks.ErrLost once the lock is no longer ours; a lock that cannot be
	// lost (a scope) has none.
	var verify func() error
	if r, ok := lock.(interface{ Renew() error }); ok {
		verify = r.Renew
	}
	res, err := supervisor.Run(context.Background(), supervisor.Config{
		Argv:    argv,
		Path:    path,
		Env:     env,
		Grace:   c.Duration("grace"),
		Timeout: c.Duration("timeout"),
		Signals: sigs,
		Watch: func() <-chan error {
			var lost <-chan error
			lost, stopHeartbeat = lock.Heartbeat()
			return lost
		},
		OnLost:      lostPolicies[c.String("on-lock-lost")],
		Verify:      verify,
		KeepOrphans: c.Bool("keep-orphans"),
		// The supervisor's events (lost, signal_forwarded, timeout,
		// teardown_killed) carry the run id and our pid like ours do.
		Log: log.With().Str("run_id", id).Int("pid", os.Getpid()).Logger(),
	})
	if err != nil {
		log.Error().Str("event", "spawn_failed").Msg(err.Error())
	}
	if res.Pid > 0 { // released and exit name the child; the supervisor's own events carry child_pid already
		events.log = events.log.With().Int("child_pid", res.Pid).Logger()
	}
	noteResult(lock, res, err) // for the run's history (history.go)
	if res.Reason == supervisor.Signaled && res.Status == supervisor.ExitStatusForSignal(res.Signal) {
		return signalStatus(res.Signal) // dies of INT and QUIT, after the deferred release
	}
	return silentExit(res.Status)
}

// acquireInterruptible waits for the lock while watching for signals: one
// whose default action ends a process aborts the wait (the wait's cause is
// the exit it asks for, signalStatus), TSTP, TTIN and TTOU
// stop withlock meanwhile (but in an orphaned group), CONT and WINCH
// change nothing.
func acquireInterruptible(sigs *supervisor.Signals, be backend, runID string, wait time.Duration) (heldLock, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		for {
			select {
			case <-stop:
				return
			case s := <-sigs.C():
				switch {
				case supervisor.AbortsWait(s):
					cancel(signalStatus(s))
					return
				case supervisor.StopsJob(s) && !supervisor.Orphaned():
					// Stopped like any waiting process (nothing is held
					// or running yet); the wait goes on once continued.
					// In an orphaned group, as the kernel does for any
					// process there, the stop is dropped: nobody could
					// continue it.
					_ = supervisor.StopSelf()
				}
			}
		}
	})
	lock, err := be.Acquire(ctx, runID, wait)
	close(stop)
	watcher.Wait()
	if cause := context.Cause(ctx); lock != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		// The signal won the race with the grant: honour it, run nothing.
		// The exit it asks for prints nothing; a release that fails leaves
		// the lock to its TTL.
		_ = lock.Release()
		return nil, cause
	}
	return lock, err
}

// acquireFailure maps a failed acquisition of the run lock of runID, or of
// a scope (c is scope's), to its exit status and line.
func acquireFailure(c *cli.Command, log zerolog.Logger, runID string, err error) error {
	var ee *exitError
	var held *locks.HeldError
	switch {
	case errors.As(err, &ee):
		return ee // a signal aborted the wait: dies of INT and QUIT, else 128+N
	case errors.Is(err, locks.ErrModeMismatch):
		return exitWith(exitUsage, err) // the holders disagree about --max/--shared
	case errors.Is(err, locks.ErrHeld), errors.Is(err, scope.ErrConflict):
		if !c.Bool("quiet") {
			ev := log.Error().Str("event", "conflict")
			if c.Name == "run" {
				ev = ev.Str("run_id", runID)
			}
			if errors.As(err, &held) {
				ev = ev.Int("holder_pid", held.Holder.Pid)
			}
			ev.Msg(err.Error())
		}
		// --conflict-exit-code, nothing more printed; it wraps err (the
		// exit event tells a conflict by it).
		return &exitError{code: c.Int("conflict-exit-code"), err: err}
	case errors.Is(err, scope.ErrUsage):
		return usageError("scope: %v", err)
	case c.Name == "scope":
		return exitWith(exitCantCreate, fmt.Errorf("scope: %w", err))
	}
	return exitWith(exitCantCreate, fmt.Errorf("run %q: %w", runID, err))
}

// releaseBounded releases the lock and reports whether that worked. A
// release that has not finished after releaseBound (a hung filesystem)
// must never block exit, the TTL frees the lock anyway: it is logged and
// onStuck runs; onStuck ends the process with the run's status (exitNow),
// so the hung release is left behind.
//
// The descriptors set aside for the release (checkDescriptors, app.go) are handed back
// only when it runs out of descriptors: a release that cannot open a file
// has changed nothing, and runs again with them. Closing them first would
// put two closes on the way to the next holder's start, for the rare run
// that needs them.
func releaseBounded(log zerolog.Logger, runID string, lock heldLock, onStuck func()) bool {
	// The release runs on the caller's goroutine, whose stack the run has
	// grown already: a new goroutine would grow its own (copying it, page
	// faults) between the child's exit and the lock's removal, and again
	// for the history's append after it. A timer watches it instead.
	stuck := time.AfterFunc(releaseBound, func() {
		log.Warn().Str("event", "release_failed").Str("run_id", runID).Msg("lock release timed out; it expires with its TTL")
		onStuck()
	})
	err := lock.Release()
	if filelock.OutOfDescriptors(err) {
		filelock.FreeReserve() // the descriptors set aside for the release (checkDescriptors, app.go)
		err = lock.Release()
	}
	if !stuck.Stop() {
		return false // onStuck ran (in withlock it ended the process)
	}
	if err != nil && !errors.Is(err, locks.ErrLost) {
		log.Warn().Str("event", "release_failed").Str("run_id", runID).Err(err).Msg("lock not released; it expires with its TTL")
	}
	return err == nil
}

// releaseBound is how long releaseBounded waits for a release; a variable
// for tests.
var releaseBound = 5 * time.Second

// childEnv is base with add appended, and without any earlier setting of
// the variables add sets: a withlock nested in another's child must hand
// down its own WITHLOCK_RUN_ID, and for getenv the first of two equal keys
// wins.
func childEnv(base, add []string) []string {
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		key, _, _ := strings.Cut(kv, "=")
		return slices.ContainsFunc(add, func(a string) bool { return strings.HasPrefix(a, key+"=") })
	})
	return append(env, add...)
}
