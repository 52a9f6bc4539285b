package supervisor

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
)

// noCause marks a run that withlock did not kill for a reason of its own:
// the child's status is passed through.
const noCause Reason = -1

// supervision is the state of one Run after the child started. Everything
// happens on Run's goroutine, in one select loop: reaping, forwarding,
// timers and teardown, so there is nothing to lock.
//
// Reaping and the exec status: the child is started with syscall.ForkExec
// (no os/exec Cmd, no Cmd.Wait), and every exit — the main child's, a
// reparented daemon's, a zombie's — is collected by reap's
// wait4(-1, WNOHANG) loop, which runs on every turn of the loop. The main
// child's status is taken from that loop by pid, so the reaper cannot steal
// it from anyone. A turn follows the main child's exit (forkAndAwait's
// waitid) and each SIGCHLD (subscribed right after the fork, before the
// first turn), so an exit can be late by one turn but never lost.
type supervision struct {
	cfg  Config
	log  zerolog.Logger
	self int // our pid: the root of the tree we clean
	pid  int // the main child
	pgid int // the command's process group: pid, or withlock's when shared
	// shared: the command is in withlock's group, its caller's
	// (sharesCallersGroup). That group is never signalled as a whole (it
	// holds the caller): its members below withlock are, one by one.
	shared bool
	tty    *terminal // withlock's controlling terminal on the child's stdio, or nil
	gave   bool      // the child's side holds the terminal: withlock gave it
	chld   <-chan os.Signal
	// childExited receives once the main child has exited (not yet
	// reaped): forkAndAwait's waitid returned.
	childExited <-chan struct{}
	lost        <-chan error // Config.Watch's: the lock was lost

	exited bool            // the main child is reaped
	status unix.WaitStatus // its status, once exited

	cause    Reason    // TimedOut or LockLost when withlock killed for that; else noCause
	tearing  bool      // TERM has gone out; KILL is due at killAt
	killAt   time.Time // when the grace ends
	killedAt time.Time // when KILL went out; zero before
	draining bool      // the main child is gone; leftovers are being cleaned
	// resumedBy: withlock stopped itself and was continued; the CONT that
	// did it is still to come through the subscription, and is not
	// forwarded again (resume continued the tree already).
	resumedBy bool
}

func (s *supervision) run(ctx context.Context) Result {
	var timeout <-chan time.Time // nil: no timeout, never ready
	if s.cfg.Timeout > 0 {
		t := time.NewTimer(s.cfg.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	wake := time.NewTimer(time.Hour)
	defer wake.Stop()
	lost, done := s.lost, ctx.Done()

	for {
		s.reap()
		if s.exited && !s.draining {
			s.startDraining()
		}
		if s.draining && s.treeGone() {
			break
		}
		if !s.killedAt.IsZero() && time.Since(s.killedAt) > finalWait {
			s.giveUp()
			break
		}
		wake.Reset(s.nextWake())
		select {
		case <-s.chld: // reap, on the next turn, takes what it reports
		case <-s.childExited:
			s.childExited = nil
		case sig := <-s.cfg.Signals.C():
			s.onSignal(sig)
		case <-timeout:
			timeout = nil
			s.log.Info().Str("event", "timeout").Dur("timeout", s.cfg.Timeout).Msg("timeout elapsed, stopping the command")
			s.teardown(TimedOut)
		case err := <-lost:
			lost = nil
			s.onLost(err)
		case <-done:
			done = nil
			s.log.Debug().Err(ctx.Err()).Msg("context done, stopping the command")
			s.teardown(noCause)
		case <-wake.C:
			s.followStalledStop()
		}
		if s.tearing && s.killedAt.IsZero() && !time.Now().Before(s.killAt) {
			s.kill()
		}
	}
	s.takeTerminal()
	return s.result()
}

// nextWake is how long the loop may sleep without an event: one poll
// interval while leftovers are awaited, stallPoll while the child's group
// holds the terminal (followStalledStop), and never past the grace's end.
func (s *supervision) nextWake() time.Duration {
	d := time.Hour
	if s.gave && !s.shared {
		d = stallPoll
	}
	if s.draining || !s.killedAt.IsZero() {
		d = pollInterval
	}
	if s.tearing && s.killedAt.IsZero() {
		d = min(d, max(time.Until(s.killAt), 0))
	}
	return d
}

// reap collects every exited child, notes the main child's status, and
// makes withlock follow a main child stopped by TSTP, TTIN or TTOU
// (suspend). It loops wait4(-1, WNOHANG|WUNTRACED) until nothing is left to
// report (signals coalesce: one SIGCHLD may stand for many exits).
//
// It takes every child's status, so the supervisor must be the only waiter
// in the process: a concurrent os/exec Cmd.Wait would lose its status to
// it (containerd's pkg/sys/reaper does the same). A stop's report is taken
// too, so each stop is followed once (a continued child reports nothing
// more). Sharing its group, withlock got the same stop signal from the
// terminal and follows on that instead; a stop by SIGSTOP (a debugger, an
// operator) is left to whoever stopped it.
func (s *supervision) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG|unix.WUNTRACED, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil && !errors.Is(err, unix.ECHILD):
			s.log.Warn().Err(err).Msg("reap")
			return
		case pid <= 0:
			return
		case ws.Stopped():
			if pid == s.pid && StopsJob(ws.StopSignal()) && !s.tearing && !s.shared {
				s.log.Debug().Stringer("signal", ws.StopSignal()).Int("pid", pid).Msg("command stopped by job control")
				s.suspend(ws.StopSignal(), false)
			}
		case pid == s.pid:
			s.exited, s.status = true, ws
			s.log.Debug().Int("pid", pid).Int("status", exitStatus(ws)).Msg("child ended")
		default:
			s.log.Debug().Int("pid", pid).Int("status", exitStatus(ws)).Msg("reaped orphan")
		}
	}
}

// onSignal acts on a caught signal: TERM and INT start the teardown, TSTP,
// TTIN and TTOU stop the child's tree and withlock (jobctl_linux.go), and
// every other one is forwarded to the child's group.
//
// Sharing the caller's group, the terminal's own signals (Ctrl-C, Ctrl-\,
// Ctrl-Z, a resize; TTIN and TTOU go to the group of a background reader
// or writer) the kernel has delivered to the whole group, caller and
// command: they are not forwarded (one key press, one signal to the
// command: a program that takes a second Ctrl-C for "force quit" must not
// see a copy), and an INT starts no teardown (a program that traps it runs
// on, as it would without withlock). A stop still stops withlock and
// whatever of the tree left the group (suspend), so that nothing of it
// runs while withlock renews nothing.
func (s *supervision) onSignal(sig os.Signal) {
	ss, ok := sig.(syscall.Signal)
	switch {
	case !ok:
	case s.shared && StopsJob(ss):
		s.suspend(ss, false)
	case s.shared && (ss == syscall.SIGINT || ss == syscall.SIGQUIT || ss == syscall.SIGWINCH):
		s.log.Debug().Stringer("signal", ss).Msg("the terminal's signal reached the command's group itself; not forwarding")
	case ss == syscall.SIGTERM || ss == syscall.SIGINT:
		s.onStop(ss)
	case StopsJob(ss):
		s.suspend(ss, true)
	case ss == syscall.SIGCONT && s.resumedBy:
		s.resumedBy = false
		s.log.Debug().Msg("the CONT that resumed withlock; the command is continued already")
	default:
		// WINCH and CONT arrive in bursts (a resized terminal): debug only.
		ev := s.log.Info()
		if ss == syscall.SIGWINCH || ss == syscall.SIGCONT {
			ev = s.log.Debug()
		}
		ev.Str("event", "signal_forwarded").Stringer("signal", ss).Int("pgid", s.pgid).Msg("forwarding signal")
		s.signalGroup(ss)
		// After a CONT: a SIGSTOP withlock could not see may have held it
		// for longer than the lock's TTL: look now (the Verify hook) rather
		// than at the next renewal; a failure is a lost lock.
		if ss == syscall.SIGCONT && s.cfg.Verify != nil && !s.exited {
			if err := s.cfg.Verify(); err != nil {
				s.onLost(err)
			}
		}
	}
}

// onStop (TERM and INT start the teardown) forwards TERM or INT, follows it with CONT and starts the grace.
//
// During the grace a second INT kills at once (Ctrl-C twice). A repeated
// TERM does not: it is the same stop, neither forwarded again nor cutting
// the grace. Under systemd's KillMode=control-group every process gets
// TERM, an inner withlock included, and the outer withlock forwards its
// own TERM to that inner one a moment later; were that a second signal,
// the inner withlock would KILL its command in the middle of its cleanup.
func (s *supervision) onStop(sig syscall.Signal) {
	if s.tearing {
		if sig == syscall.SIGINT && s.killedAt.IsZero() {
			s.log.Info().Str("event", "teardown_killed").Stringer("signal", sig).Int("pgid", s.pgid).Msg("second interrupt during the grace, killing now")
			s.kill()
			return
		}
		s.log.Debug().Stringer("signal", sig).Int("pgid", s.pgid).Msg("already stopping; the grace runs on")
		return
	}
	s.log.Info().Str("event", "signal_forwarded").Stringer("signal", sig).Int("pgid", s.pgid).Msg("forwarding signal")
	s.stopGroup(sig)
}

// onLost applies the lost-lock policy.
func (s *supervision) onLost(err error) {
	if s.cfg.OnLost == WarnOnLost {
		s.log.Warn().Str("event", "lost").Err(err).Msg("lock lost; the command runs on (--on-lock-lost warn)")
		return
	}
	s.log.Error().Str("event", "lost").Err(err).Msg("lock lost, stopping the command")
	s.teardown(LockLost)
}

// teardown starts TERM → grace → KILL for cause (noCause: pass the child's
// status through). The first stop wins: once a grace runs, a later cause
// changes neither the deadline nor the status, and a child that already
// ended by itself keeps its own status.
func (s *supervision) teardown(cause Reason) {
	if s.exited || s.tearing {
		return
	}
	s.cause = cause
	s.stopGroup(syscall.SIGTERM)
}

// stopGroup sends sig and then CONT to the child's group and starts the
// grace. CONT after the stop signal, as systemd does: a stopped process
// (Ctrl-Z, a background read of the terminal) holds the TERM pending and
// would sit out the whole grace until KILL.
func (s *supervision) stopGroup(sig syscall.Signal) {
	s.signalGroup(sig)
	s.signalGroup(syscall.SIGCONT)
	s.startGrace()
}

// startGrace starts the grace, after which everything is KILLed, unless a
// grace runs already: one stop never takes longer than one grace.
func (s *supervision) startGrace() {
	if !s.tearing {
		s.tearing = true
		s.killAt = time.Now().Add(s.cfg.Grace)
	}
}

// startDraining runs once the main child is reaped: the terminal comes back
// to withlock, and the rest of its group and every reparented descendant get
// TERM, with KILL due after the grace (or at the teardown's deadline, if one
// runs already, so the whole stop fits in one grace).
func (s *supervision) startDraining() {
	s.draining = true
	s.takeTerminal()
	if s.cfg.KeepOrphans {
		return
	}
	left := s.descendants()
	if len(left) == 0 {
		return
	}
	s.log.Debug().Int("count", len(left)).Msg("stopping leftover processes")
	if !s.killedAt.IsZero() {
		s.kill()
		return
	}
	s.signalTree(left, syscall.SIGTERM)
	s.signalTree(left, syscall.SIGCONT) // see stopGroup
	s.startGrace()
}

// kill sends KILL to the child's group and every descendant (with
// KeepOrphans, to the group only).
func (s *supervision) kill() {
	if s.killedAt.IsZero() {
		s.killedAt = time.Now()
		s.log.Info().Str("event", "teardown_killed").Int("pgid", s.pgid).Dur("grace", s.cfg.Grace).Msg("grace over, killing")
	}
	s.signalGroup(syscall.SIGKILL)
	if !s.cfg.KeepOrphans {
		s.signalTree(s.descendants(), syscall.SIGKILL)
	}
}

// treeGone reports whether nothing is left to wait for. Killed leftovers get
// KILL again on every poll, in case one forked between scan and signal.
func (s *supervision) treeGone() bool {
	if s.cfg.KeepOrphans {
		return true
	}
	left := s.descendants()
	if len(left) > 0 && !s.killedAt.IsZero() {
		s.signalTree(left, syscall.SIGKILL)
	}
	return len(left) == 0
}

// giveUp logs what is still there after KILL and the final wait.
func (s *supervision) giveUp() {
	left := s.descendants()
	pids := make([]int, 0, len(left))
	for _, p := range left {
		pids = append(pids, p.Pid)
	}
	s.log.Error().Ints("pids", pids).Bool("child_reaped", s.exited).Dur("waited", finalWait).
		Msg("processes survive KILL (uninterruptible sleep?); giving up on them")
}

// signalGroup signals the child's process group; an empty group is fine. A
// main child that left its group (setsid, setpgid) is signalled by pid too.
//
// Only while the main child is unreaped: until then its pid, the group id,
// cannot be reused. Once it is reaped, an emptied group's id could name a
// stranger's group after pid wrap-around, so the leftovers (all of them our
// descendants) are signalled one by one instead, checked by start time.
func (s *supervision) signalGroup(sig syscall.Signal) {
	if s.exited {
		return
	}
	if s.shared {
		s.signalTree(s.groupMembers(), sig)
		return
	}
	err := unix.Kill(-s.pid, sig)
	if err != nil && !errors.Is(err, unix.ESRCH) {
		s.log.Warn().Err(err).Stringer("signal", sig).Int("pgid", s.pgid).Msg("signal group")
	}
	if pgid, err := unix.Getpgid(s.pid); err == nil && pgid != s.pid {
		_ = unix.Kill(s.pid, sig)
	}
}

// groupMembers lists the descendants in the command's process group, and
// the main child wherever it is: what kill(-pgid) would reach of the tree.
func (s *supervision) groupMembers() []proc.Process {
	var in []proc.Process
	for _, p := range s.descendants() {
		if p.Pid == s.pid || p.Pgrp == s.pgid {
			in = append(in, p)
		}
	}
	return in
}

// signalTree signals each of ps by pidfd, unless its pid now names
// another process (proc.Signal).
func (s *supervision) signalTree(ps []proc.Process, sig syscall.Signal) {
	for _, p := range ps {
		if err := proc.Signal(p.Pid, p.StartTime, sig); err != nil {
			s.log.Warn().Err(err).Stringer("signal", sig).Int("pid", p.Pid).Msg("signal leftovers")
		}
	}
}

// descendants lists our live descendants. If /proc cannot be read there is
// nothing better to do than log it and report none (Run must return).
func (s *supervision) descendants() []proc.Process {
	ps, err := proc.Descendants(s.self)
	if err != nil {
		s.log.Warn().Err(err).Msg("list descendants")
	}
	return ps
}

// result applies SPEC §2: a kill withlock started for a reason keeps that
// reason's status; otherwise the child's own status (128+N for signal N).
func (s *supervision) result() Result {
	var r Result
	switch {
	case !s.exited:
		r = Result{Status: 128 + int(syscall.SIGKILL), Reason: Unreaped, Signal: syscall.SIGKILL}
	case s.status.Signaled():
		r = Result{Status: exitStatus(s.status), Reason: Signaled, Signal: s.status.Signal()}
	default:
		r = Result{Status: exitStatus(s.status), Reason: Exited}
	}
	switch s.cause {
	case TimedOut:
		r.Status, r.Reason = StatusTimedOut, TimedOut
	case LockLost:
		r.Status, r.Reason = StatusLockLost, LockLost
	}
	return r
}

// exitStatus is the shell's view of a wait status.
func exitStatus(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
