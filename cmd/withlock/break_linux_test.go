package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
)

// holderLock writes, as a holder on this host would, the lock of runID
// held by pid (started at start) and returns the refusal that Break gave
// while that holder was alive: what `withlock break --signal` acts on.
func holderLock(t *testing.T, r *filelock.RunLocker, runID string, pid int, start uint64) *filelock.LiveHolderError {
	t.Helper()
	self, err := filelock.SelfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	p := locks.Payload{
		RunID: runID, LockID: "0123456789abcdef0123456789abcdef", Pid: pid,
		CreatedAt: float64(now.Add(-time.Minute).Unix()), ExpiresAt: float64(now.Add(time.Hour).Unix()),
		Host: self.Host, BootID: self.BootID, PidNS: self.PidNS, PidStart: start, Command: "sleep 60",
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.LockPath(runID), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return &filelock.LiveHolderError{RunID: runID, Holder: locks.Holder{Payload: p, Local: true}, At: now}
}

// TestSignalThenBreakHolderGoneMeanwhile: the holder Break found alive
// ends before --signal's TERM (its pid gone, or reused by another
// process). Nothing is signalled, and its lock, now stale, is moved aside
// — not a failure (exit 73) because the pid could not be signalled.
func TestSignalThenBreakHolderGoneMeanwhile(t *testing.T) {
	r, err := filelock.NewRunLocker(filepath.Join(t.TempDir(), "locks"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}

	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	live := holderLock(t, r, "gone", exited.Process.Pid, 1)
	b, _, err := signalThenBreak(r, live, 5*time.Second)
	if err != nil || b.Reason != filelock.StaleDead {
		t.Fatalf("holder exited: %+v %v; want its lock moved aside as %q", b, err, filelock.StaleDead)
	}

	// The pid now names another process: it must not get the TERM.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }() // on an early failure
	start, err := proc.StartTime(other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	live = holderLock(t, r, "reused", other.Process.Pid, start+1)
	b, _, err = signalThenBreak(r, live, 5*time.Second)
	if err != nil || b.Reason != filelock.StaleReused {
		t.Fatalf("pid reused: %+v %v; want the lock moved aside as %q", b, err, filelock.StaleReused)
	}
	if !strings.HasPrefix(b.MovedTo, r.LockPath("reused")+".stale.") {
		t.Errorf("moved to %s", b.MovedTo)
	}
	// A fatal signal decides the exit status when it is sent: had the
	// TERM reached sleep, the KILL now could not change it.
	other.Process.Kill()
	other.Wait()
	if ws := other.ProcessState.Sys().(syscall.WaitStatus); ws.Signal() != syscall.SIGKILL {
		t.Errorf("the process that reused the pid was signalled: %v", other.ProcessState)
	}
}
