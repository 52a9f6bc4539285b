package supervisor

import (
	"cmp"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
)

// stopWait bounds how long a job-control stop waits for the child's group
// to stop by itself before the rest of the tree is stopped with SIGSTOP (a
// process may catch TSTP to restore the terminal first, or ignore it, as an
// interactive shell does). A variable for tests.
var stopWait = time.Second

// Job control never breaks exclusion. A stopped withlock renews nothing, so
// its lock may expire and be taken while it is stopped: nothing of the
// child's tree may run on meanwhile, and nothing of it may run again before
// withlock has checked, once continued, that the lock is still its own.
//
// suspend does it for a job-control stop by sig: a TSTP, TTIN or TTOU sent
// to withlock (forward), or one that stopped the child by itself (Ctrl-Z
// on the terminal the child holds: the TSTP goes to the child's group, not
// to withlock) or reached the caller's group that withlock shares. The
// steps:
//  1. forward sig to the child's group, so that a program that catches TSTP
//     (an editor resetting the terminal) can do so;
//  2. wait, at most stopWait, for that group to stop;
//  3. SIGSTOP whatever of the tree still runs: a process that ignored the
//     signal, and every descendant outside the group (a daemon);
//  4. take the terminal back if withlock gave it away, so the shell that
//     started withlock gets it and shows the job stopped;
//  5. stop withlock itself with SIGSTOP (as dumb-init does), and return
//     once it is continued: resume then checks the lock first.
//
// A child stopped by SIGSTOP (a debugger, an operator) is left to whoever
// stopped it: withlock runs on and keeps renewing. A TSTP in an orphaned
// group (Orphaned) stops nothing, as the kernel stops neither the caller
// nor, run without withlock, the command: a child that stopped all the
// same (its own group has withlock for a parent) is continued, and
// withlock, which nobody would continue, runs on.
func (s *supervision) suspend(sig syscall.Signal, forward bool) {
	if s.exited || s.tearing {
		s.log.Debug().Stringer("signal", sig).Msg("stopping the command already; not suspending")
		return
	}
	if sig == syscall.SIGTSTP && Orphaned() {
		s.log.Debug().Msg("TSTP in an orphaned process group, which nobody could continue: not stopping")
		if !forward && !s.shared {
			s.signalGroup(syscall.SIGCONT)
		}
		return
	}
	if forward {
		s.log.Info().Str("event", "signal_forwarded").Stringer("signal", sig).Int("pgid", s.pgid).Msg("forwarding signal")
		s.signalGroup(sig)
	}
	if !s.awaitGroupStop() {
		return // the main child ended instead: the loop drains as usual
	}
	stopped := s.stopTree()
	heldBy := s.takeTerminal()
	s.log.Info().Str("event", "suspended").Int("pgid", s.pgid).Int("stopped_outside_group", len(stopped)).Msg("command stopped; stopping withlock")
	if err := StopSelf(); err != nil {
		s.log.Warn().Err(err).Msg("could not stop withlock; continuing the command")
	} else {
		s.resumedBy = true
	}
	s.resume(stopped, heldBy)
}

// stallPoll is how often, while the child's group holds the terminal, the
// main child is looked at for a stop that sends withlock no SIGCHLD
// (followStalledStop).
const stallPoll = 250 * time.Millisecond

// followStalledStop catches a Ctrl-Z that stops the child's group but not
// the main child, which then never reports a stop: a shell that forked a
// command with vfork (dash does) waits, in uninterruptible sleep (state D),
// for that command to exec, and when the TSTP stops the command before its
// exec, the shell stays in that wait, its own TSTP pending, until the
// command is continued. A main child in D with a member of its group
// stopped is taken for a job-control stop (suspend stops the rest).
func (s *supervision) followStalledStop() {
	if s.exited || s.tearing || s.shared || !s.gave {
		return
	}
	if p, err := proc.Read(s.pid); err != nil || p.State != 'D' {
		return
	}
	for _, p := range s.groupMembers() {
		if p.Pid != s.pid && p.State == 'T' {
			s.log.Debug().Int("pid", p.Pid).Msg("command's group stopped while the command waits for it")
			s.suspend(syscall.SIGTSTP, false) // Ctrl-Z, most likely
			return
		}
	}
}

// awaitGroupStop waits until no process of the child's group runs (each
// is stopped or a zombie), or stopWait passes. It reports false when the
// main child has ended instead.
func (s *supervision) awaitGroupStop() bool {
	deadline := time.Now().Add(stopWait)
	for {
		var main byte // the main child's state letter; 0: gone
		running := false
		for _, p := range s.descendants() {
			if p.Pid == s.pid {
				main = p.State
			}
			running = running || (!runsNothing(p.State) && p.Pgrp == s.pgid)
		}
		if main == 'Z' || main == 0 {
			return false
		}
		if !running || !time.Now().Before(deadline) {
			return true
		}
		time.Sleep(pollInterval)
	}
}

// stopTree SIGSTOPs every descendant that still runs and returns those
// outside the child's group, so that resume continues exactly them (and
// the group, with one CONT each).
func (s *supervision) stopTree() []proc.Process {
	var outside []proc.Process
	for _, p := range s.descendants() {
		if runsNothing(p.State) {
			continue
		}
		if err := proc.Signal(p.Pid, p.StartTime, syscall.SIGSTOP); err != nil {
			s.log.Warn().Err(err).Int("pid", p.Pid).Msg("stop")
			continue
		}
		if p.Pgrp != s.pgid {
			outside = append(outside, p)
		}
	}
	return outside
}

// resume runs once withlock is continued after suspend. The lock is checked
// before anything of the tree runs again: lost (and --on-lock-lost kill),
// the stopped tree is KILLed at once, status 76; else the terminal goes back
// to the group that had it, when withlock is in the foreground again (`fg`;
// after `bg` the command runs in the background, and stops again by itself
// if it reads the terminal), and the tree is continued.
func (s *supervision) resume(stopped []proc.Process, heldBy int) {
	if s.cfg.Verify != nil {
		if err := s.cfg.Verify(); err != nil {
			if s.cfg.OnLost == KillOnLost {
				s.log.Error().Str("event", "lost").Err(err).Int("pgid", s.pgid).Msg("lock lost while stopped; killing the command before it runs again")
				s.cause, s.tearing, s.killAt = LockLost, true, time.Now()
				s.kill()
				return
			}
			s.log.Warn().Str("event", "lost").Err(err).Msg("lock lost while stopped; the command runs on (--on-lock-lost warn)")
		}
	}
	s.giveTerminal(heldBy)
	s.log.Info().Str("event", "resumed").Int("pgid", s.pgid).Msg("continuing the command")
	s.signalGroup(syscall.SIGCONT)
	s.signalTree(stopped, syscall.SIGCONT)
}

// takeTerminal takes the terminal back for withlock's group when withlock
// gave it away, and returns the group that held it (0: nothing taken).
func (s *supervision) takeTerminal() int {
	if !s.gave {
		return 0
	}
	s.gave = false
	heldBy := s.tty.foreground()
	if heldBy == s.tty.pgrp {
		return 0
	}
	if err := s.tty.setForeground(s.tty.pgrp); err != nil {
		s.log.Warn().Err(err).Msg("take the terminal back")
		return 0
	}
	return heldBy
}

// giveTerminal hands the terminal to heldBy (or the child's group) when
// withlock's group holds it, that is when withlock is in the foreground.
func (s *supervision) giveTerminal(heldBy int) {
	if s.shared || s.tty == nil || !s.tty.ours() {
		return
	}
	heldBy = cmp.Or(heldBy, s.pid)
	err := s.tty.setForeground(heldBy)
	if err != nil && heldBy != s.pid {
		// The group that had it is gone: the child's own group then.
		err = s.tty.setForeground(s.pid)
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("give the terminal back")
		return
	}
	s.gave = true
}

// runsNothing reports whether a process's state letter is one that runs
// nothing: stopped, traced, a zombie, or gone (0).
func runsNothing(state byte) bool {
	return state == 0 || state == 'T' || state == 't' || state == 'Z'
}

// StopSelf stops withlock with SIGSTOP and returns once it is continued.
// The signal is sent to the calling thread (tgkill, on a locked thread), so
// the kernel stops the process on the way out of that very call: when it
// returns, withlock has been stopped and continued.
func StopSelf() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP); err != nil {
		return fmt.Errorf("stop withlock: %w", err)
	}
	return nil
}
