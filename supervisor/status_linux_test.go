package supervisor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/supervisor"
)

// TestExitStatuses runs Run in the test process itself (no test here runs in
// parallel, so its wait4(-1) steals no one's status) and checks SPEC §2.
func TestExitStatuses(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lostNow := func() <-chan error {
		c := make(chan error, 1)
		c <- errors.New("lock file gone")
		return c
	}
	tests := []struct {
		name    string
		argv    []string
		timeout time.Duration
		path    string
		lost    <-chan error
		onLost  supervisor.LostPolicy
		status  int
		reason  supervisor.Reason
		errIs   error
	}{
		{name: "exit 0", argv: []string{"true"}, status: 0, reason: supervisor.Exited},
		{name: "exit 1", argv: []string{"false"}, status: 1, reason: supervisor.Exited},
		{name: "exit 2", argv: []string{"sh", "-c", "exit 2"}, status: 2, reason: supervisor.Exited},
		{name: "exit 255", argv: []string{"sh", "-c", "exit 255"}, status: 255, reason: supervisor.Exited},
		{name: "killed by TERM", argv: []string{"sh", "-c", "kill -TERM $$"}, status: 143, reason: supervisor.Signaled},
		{name: "timeout", argv: []string{"sleep", "60"}, timeout: 200 * time.Millisecond, status: 124, reason: supervisor.TimedOut},
		{name: "lock lost, kill", argv: []string{"sleep", "60"}, lost: lostNow(), status: 76, reason: supervisor.LockLost},
		{name: "lock lost, warn", argv: []string{"sh", "-c", "sleep 0.2; exit 5"}, lost: lostNow(), onLost: supervisor.WarnOnLost, status: 5, reason: supervisor.Exited},
		{name: "not executable", argv: []string{notExec}, status: 126, reason: supervisor.SpawnFailed, errIs: supervisor.ErrNotExecutable},
		{name: "missing path", argv: []string{filepath.Join(dir, "missing")}, status: 127, reason: supervisor.SpawnFailed, errIs: supervisor.ErrNotFound},
		{name: "missing in PATH", argv: []string{"withlock-no-such-command"}, status: 127, reason: supervisor.SpawnFailed, errIs: supervisor.ErrNotFound},
		{name: "directory", argv: []string{dir}, status: 126, reason: supervisor.SpawnFailed, errIs: supervisor.ErrNotExecutable},
		// Path, looked up before a lock wait, is what runs (not a new search of Argv[0]).
		{name: "path looked up before", argv: []string{"withlock-no-such-command"}, path: "/bin/false", status: 1, reason: supervisor.Exited},
		{name: "path gone since", argv: []string{"withlock-no-such-command"}, path: filepath.Join(dir, "missing"), status: 127, reason: supervisor.SpawnFailed, errIs: supervisor.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := supervisor.Run(context.Background(), supervisor.Config{
				Argv: tt.argv, Path: tt.path, Grace: 5 * time.Second, Timeout: tt.timeout, Watch: func() <-chan error { return tt.lost }, OnLost: tt.onLost,
			})
			if res.Status != tt.status || res.Reason != tt.reason {
				t.Errorf("got status %d (%s), want %d (%s)", res.Status, res.Reason, tt.status, tt.reason)
			}
			if tt.errIs == nil && err != nil {
				t.Errorf("unexpected error: %v", err)
			}
			named := tt.argv[0] // the command, or the program that ran in its place
			if tt.path != "" {
				named = tt.path
			}
			if tt.errIs != nil && (!errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), filepath.Base(named))) {
				t.Errorf("error %v, want %v naming %s", err, tt.errIs, named)
			}
		})
	}
}

// TestNotExecutableInPath: a match in PATH without the execute bit is 126,
// as in sh, not 127.
func TestNotExecutableInPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := supervisor.Run(context.Background(), supervisor.Config{Argv: []string{"tool"}, Env: []string{"PATH=" + dir}})
	if res.Status != 126 || !errors.Is(err, supervisor.ErrNotExecutable) {
		t.Errorf("status %d, error %v; want 126 and ErrNotExecutable", res.Status, err)
	}
}

// TestContextCancelStopsChild: cancelling Run's context tears the child
// down like a TERM and passes its status through.
func TestContextCancelStopsChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := supervisor.Run(ctx, supervisor.Config{Argv: []string{"sleep", "60"}, Grace: 5 * time.Second})
	if err != nil || res.Status != 143 {
		t.Errorf("status %d, error %v; want 143", res.Status, err)
	}
}

func TestAbortsWaitAndExitStatusForSignal(t *testing.T) {
	// The signals whose default action is not to end the process.
	keepsWaiting := map[syscall.Signal]bool{syscall.SIGCONT: true, syscall.SIGWINCH: true,
		syscall.SIGTSTP: true, syscall.SIGTTIN: true, syscall.SIGTTOU: true}
	for _, sig := range supervisor.Caught {
		s := sig.(syscall.Signal)
		if got := supervisor.AbortsWait(s); got != !keepsWaiting[s] {
			t.Errorf("AbortsWait(%v) = %v, want %v", s, got, !keepsWaiting[s])
		}
		stops := s == syscall.SIGTSTP || s == syscall.SIGTTIN || s == syscall.SIGTTOU
		if got := supervisor.StopsJob(s); got != stops {
			t.Errorf("StopsJob(%v) = %v, want %v", s, got, stops)
		}
	}
	if got := supervisor.ExitStatusForSignal(os.Interrupt); got != 130 {
		t.Errorf("ExitStatusForSignal(INT) = %d, want 130", got)
	}
}

// TestCaughtIsEveryCatchableSignal: every standard signal is caught but
// KILL and STOP (uncatchable), CHLD (subscribed after the fork), URG (the
// runtime's preemption) and PROF (the runtime's profiler).
func TestCaughtIsEveryCatchableSignal(t *testing.T) {
	skipped := map[syscall.Signal]bool{syscall.SIGKILL: true, syscall.SIGSTOP: true,
		syscall.SIGCHLD: true, syscall.SIGURG: true, syscall.SIGPROF: true}
	caught := map[syscall.Signal]bool{}
	for _, sig := range supervisor.Caught {
		caught[sig.(syscall.Signal)] = true
	}
	for sig := syscall.Signal(1); sig < 32; sig++ {
		if caught[sig] == skipped[sig] {
			t.Errorf("%v (%d): caught %v, skipped %v", sig, int(sig), caught[sig], skipped[sig])
		}
	}
}
