package supervisor

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/failpoint"
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
	cfg.Stdin, cfg.Stdout, cfg.Stderr = orStd(cfg.Stdin, os.Stdin), orStd(cfg.Stdout, os.Stdout), orStd(cfg.Stderr, os.Stderr)
	if cfg.Signals == nil {
		cfg.Signals = NotifyAsync()
		defer cfg.Signals.Stop()
	}
	cfg.Signals.Wait() // every signal from here on is the supervisor's

	if failpoint.On(failpoint.NoSubreaper) {
		cfg.KeepOrphans = true
	} else if err := setSubreaper(true); err != nil {
		cfg.Log.Warn().Err(err).Msg("orphaned descendants will escape to init")
	} else {
		// Undone once Run returns (daemons kept by KeepOrphans are ours
		// by then); clearing a mark that could be set does not fail.
		defer setSubreaper(false)
	}

	// Sharing the caller's group, the command never gets the terminal
	// (it has it with withlock when their group has it); otherwise the
	// child's own group gets it when withlock holds it now.
	tty := controllingTerminal(cfg.Stdin, cfg.Stdout, cfg.Stderr)
	shared := sharesCallersGroup(tty)
	var term *terminal
	if !shared && tty != nil && tty.ours() {
		term = tty
	}
	started := make(chan spawned, 1)
	exited := make(chan struct{}, 1)
	go forkAndAwait(cfg, spawnMode{term: term, shared: shared}, started, exited)
	sp := <-started
	if sp.err != nil {
		return Result{Status: spawnStatus(sp.err), Reason: SpawnFailed}, sp.err
	}
	pid := sp.pid
	cfg.Log = cfg.Log.With().Int("child_pid", pid).Logger() // every event from here on names the child
	// SIGCHLD now, while the child execs. An orphan that exits before it
	// is subscribed is reaped on the loop's first turn.
	cfg.Signals.Complete()
	var lost <-chan error
	if cfg.Watch != nil {
		lost = cfg.Watch()
	}
	cfg.Log.Debug().Int("pid", pid).Strs("argv", cfg.Argv).Bool("terminal", term != nil).Bool("callers_group", shared).Msg("child started")
	s := &supervision{cfg: cfg, log: cfg.Log, self: os.Getpid(), pid: pid, pgid: pid, shared: shared, tty: tty, gave: term != nil,
		chld: cfg.Signals.Chld(), childExited: exited, lost: lost, cause: noCause}
	if shared {
		s.pgid = unix.Getpgrp()
	}
	res := s.run(ctx)
	res.Pid = pid
	return res, nil
}

// spawned is what forkAndAwait reports once the fork is done.
type spawned struct {
	pid int
	err error
}

// forkAndAwait starts the child from a goroutine locked to its thread and
// keeps that thread until the child has exited: PR_SET_PDEATHSIG fires when
// the forking *thread* ends (see spawn), and a locked thread is only ever
// this goroutine's. It then blocks in waitid(WNOWAIT) on the child, so the
// kernel wakes this very thread when the child exits and the supervision
// loop, made runnable here, runs next on it: no wake-up travels through
// Go's signal thread, the signal goroutine and a locked loop thread first.
// WNOWAIT leaves the zombie for the loop's reaper, the one place statuses
// are taken. If Run gives up on a child that never dies, this goroutine
// stays blocked; the process ends soon after anyway.
func forkAndAwait(cfg Config, mode spawnMode, started chan<- spawned, exited chan<- struct{}) {
	runtime.LockOSThread()
	pid, err := spawn(cfg, mode)
	started <- spawned{pid, err}
	if err == nil {
		awaitExit(pid)
	}
	runtime.UnlockOSThread()
	exited <- struct{}{}
}

// awaitExit blocks until child pid has exited (or is no longer ours to
// wait for: ECHILD once the loop has reaped it), without reaping it.
func awaitExit(pid int) {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
}

// parentAtStart is withlock's parent as seen at start-up, to tell afterwards
// whether the parent died before DieWithParent armed the signal.
var parentAtStart = os.Getppid()

// DieWithParent asks the kernel to send withlock SIGTERM when its parent
// dies (--die-with-parent). TERM rather than KILL: withlock handles TERM like
// any TERM — it aborts a lock wait (status 143), or tears the child's whole
// tree down (forward, grace, KILL, leftovers) — whereas a KILLed withlock
// would leave the child's reparented daemons behind. Call it after
// NotifyAsync: once the subscription is in place, the TERM is caught. If the parent is already gone, the TERM is
// sent at once.
//
// The kernel ties the parent-death signal to the parent's forking thread:
// a multithreaded parent whose forking thread exits early triggers it too.
func DieWithParent() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_PDEATHSIG: %w", err)
	}
	if os.Getppid() != parentAtStart {
		if err := unix.Kill(os.Getpid(), unix.SIGTERM); err != nil {
			return fmt.Errorf("parent already gone; signal self: %w", err)
		}
	}
	return nil
}
