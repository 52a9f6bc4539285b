package reaper_test

import (
	"fmt"
	"github.com/withlock/withlock/internal/testwait"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/withlock/withlock/reaper"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, cond)
}

func pidsOf(ps []reaper.Process) []int {
	var pids []int
	for _, p := range ps {
		pids = append(pids, p.Pid)
	}
	return pids
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

func TestDescendantsFindsGrandchildren(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	var ds []reaper.Process
	waitFor(t, "sh and both sleeps", func() bool {
		var err error
		ds, err = reaper.Descendants(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		return len(ds) >= 3
	})
	if !slices.Contains(pidsOf(ds), cmd.Process.Pid) {
		t.Errorf("descendants %v lack the child %d", pidsOf(ds), cmd.Process.Pid)
	}
	for _, d := range ds {
		if d.Pid != cmd.Process.Pid && d.PPid != cmd.Process.Pid {
			t.Errorf("%+v: not the child or its child", d)
		}
	}
}

func TestParseStatWithOddCommand(t *testing.T) {
	// A command name may hold spaces and parentheses; fields count from the last ')'.
	cmd := exec.Command("sh", "-c", `cp /bin/sleep "$0" && exec "$0" 60`, t.TempDir()+"/a) b (c")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitFor(t, "renamed sleep", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm")
		return string(b) == "a) b (c\n"
	})
	p, err := reaper.ReadProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if p.PPid != os.Getpid() || p.StartTime == 0 {
		t.Errorf("parsed %+v, want ppid %d and a start time", p, os.Getpid())
	}
}

func TestReadProcessGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := reaper.ReadProcess(cmd.Process.Pid); err == nil {
		t.Errorf("read a reaped process without error")
	}
}

// TestSignalChecksStartTime: a Process whose start time does not match (its
// pid now names another process) is left alone; the right one is signalled.
func TestSignalChecksStartTime(t *testing.T) {
	cmd := startSleep(t)
	p, err := reaper.ReadProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stale := p
	stale.StartTime++
	if err := reaper.Signal(stale, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got, err := reaper.ReadProcess(p.Pid); err != nil || got.StartTime != p.StartTime {
		t.Fatalf("the process with a different start time was killed: %v", err)
	}
	if err := reaper.SignalAll([]reaper.Process{p}, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("child ended %v, want killed", err)
	}
}

// TestSubreaperAdoptsAndReapCollects: with the subreaper mark, a
// double-forked grandchild reparents to us, and Reap collects it once dead.
func TestSubreaperAdoptsAndReapCollects(t *testing.T) {
	if err := reaper.SetSubreaper(true); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := reaper.SetSubreaper(false); err != nil {
			t.Error(err)
		}
	}()
	if on, err := reaper.IsSubreaper(); err != nil || !on {
		t.Fatalf("IsSubreaper = %v, %v after SetSubreaper(true)", on, err)
	}
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
	waitFor(t, "orphan to reparent to us", func() bool {
		p, err := reaper.ReadProcess(orphan)
		return err == nil && p.PPid == os.Getpid()
	})
	if err := syscall.Kill(orphan, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var reaped []reaper.Exit
	waitFor(t, "Reap to collect the orphan", func() bool {
		exits, err := reaper.Reap()
		if err != nil {
			t.Fatal(err)
		}
		reaped = append(reaped, exits...)
		return slices.ContainsFunc(reaped, func(e reaper.Exit) bool { return e.Pid == orphan })
	})
	for _, e := range reaped {
		if e.Pid == orphan && e.Status.Signal() != syscall.SIGKILL {
			t.Errorf("orphan status %v, want killed", e.Status)
		}
	}
}
