package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/internal/testwait"
)

// The reaper's parts of the supervisor, tested in the package: making this
// process a subreaper, reaping, signalling by pidfd, reading a stop.
// (What they read from /proc, internal/proc's tests cover.)

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, cond)
}

// startSleep starts `sleep 60` as our child and KILLs and reaps it at the end.
func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// TestSignalChecksStartTime: a Process whose start time does not match (its
// pid now names another process) is left alone; the right one is signalled;
// a process already gone is no error.
func TestSignalChecksStartTime(t *testing.T) {
	cmd := startSleep(t)
	p, err := proc.Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale := p
	stale.StartTime++
	if err := proc.Signal(stale.Pid, stale.StartTime, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got, err := proc.Read(p.Pid); err != nil || got.StartTime != p.StartTime {
		t.Fatalf("the process with a different start time was killed: %v", err)
	}
	if err := proc.Signal(p.Pid, p.StartTime, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("child ended %v, want killed", err)
	}
	if err := proc.Signal(p.Pid, p.StartTime, syscall.SIGKILL); err != nil {
		t.Errorf("signalling a reaped process: %v, want no error", err)
	}
}

// TestSubreaperAdoptsAndReapCollects: with the subreaper mark, a
// double-forked grandchild reparents to us, and reap collects it once
// dead (no zombie left).
func TestSubreaperAdoptsAndReapCollects(t *testing.T) {
	if err := setSubreaper(1); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := setSubreaper(0); err != nil {
			t.Error(err)
		}
	}()
	// The subshell exits at once, leaving its sleep (whose stdout and
	// stderr are not Output's pipes, or Output would wait for it).
	out, err := exec.Command("sh", "-c", "(sleep 60 >/dev/null 2>&1 & echo $!)").Output()
	if err != nil {
		t.Fatal(err)
	}
	var orphan int
	if _, err := fmt.Sscan(string(out), &orphan); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "orphan to reparent to us", func() bool {
		p, err := proc.Read(orphan)
		return err == nil && p.PPid == os.Getpid()
	})
	if err := syscall.Kill(orphan, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s := &supervision{log: zerolog.Nop(), cause: noCause}
	waitUntil(t, "reap to collect the orphan", func() bool {
		s.reap()
		_, err := proc.Read(orphan)
		return err != nil
	})
}
