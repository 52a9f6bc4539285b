package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/reaper"
)

// Tunables of the final phase, variables so tests can read them.
var (
	// finalWait bounds how long Run waits for the tree to vanish after KILL;
	// a process stuck in uninterruptible sleep must not keep withlock alive.
	finalWait = 2 * time.Second
	// pollInterval is how often /proc is rescanned while leftovers (which
	// may be grandchildren, whose exits send us no SIGCHLD) are awaited.
	pollInterval = 20 * time.Millisecond
)

// Run starts the child, supervises it until it and every descendant is gone
// (or KeepOrphans leaves them), and returns how it ended. The error is
// non-nil only when the child could not be started; Result.Status is then
// 126 or 127 and the error names the command.
//
// While Run runs it owns every child of this process: it reaps them all with
// wait4(-1), so no other goroutine may wait for children (os/exec's
// Cmd.Wait would lose its status) until Run returns.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Argv) == 0 {
		return Result{Status: StatusNotFound, Reason: SpawnFailed}, fmt.Errorf("%w: empty command", ErrNotFound)
	}
	if cfg.Env == nil {
		cfg.Env = os.Environ()
	}
	if cfg.Signals == nil {
		cfg.Signals = Notify()
		defer cfg.Signals.Stop()
	}
	// The forking thread must outlive the child (see spawn), and restore
	// changes this thread's signal mask.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// Subscribe to SIGCHLD before the fork, so no exit goes unnoticed.
	chld := cfg.Signals.chld
	if chld == nil {
		chld = make(chan os.Signal, 1)
		signal.Notify(chld, syscall.SIGCHLD)
		defer signal.Stop(chld)
	}

	if brokenNoSubreaper {
		cfg.KeepOrphans = true
	} else if err := reaper.SetSubreaper(true); err != nil {
		cfg.Log.Warn().Err(err).Msg("orphaned descendants will escape to init")
	} else {
		defer clearSubreaper(cfg.Log)
	}

	term := foregroundTerminal(orStd(cfg.Stdin, os.Stdin))
	pid, err := spawn(cfg, term)
	if err != nil {
		return Result{Status: spawnStatus(err), Reason: SpawnFailed}, err
	}
	cfg.Log.Debug().Int("pid", pid).Strs("argv", cfg.Argv).Bool("terminal", term != nil).Msg("child started")
	s := &supervision{cfg: cfg, log: cfg.Log, self: os.Getpid(), pid: pid, term: term, chld: chld, cause: noCause}
	return s.run(ctx), nil
}

// clearSubreaper undoes SetSubreaper, so the process is as it was once Run
// returns (daemons kept by KeepOrphans are already ours by then).
func clearSubreaper(log zerolog.Logger) {
	if err := reaper.SetSubreaper(false); err != nil {
		log.Warn().Err(err).Msg("could not clear the subreaper mark")
	}
}
