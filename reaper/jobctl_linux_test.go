package reaper_test

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/withlock/withlock/reaper"
)

// TestStopSignalTakesNothing: a child stopped by TSTP and then by STOP is
// reported with the signal each time, as often as asked; continued it
// reports nothing; and its exit status is still Reap's afterwards.
func TestStopSignalTakesNothing(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	// In a group of its own, whose parent (we) is in another: the kernel
	// discards TSTP sent to an orphaned group, as ours may be under go test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL); _ = cmd.Wait() })
	p, err := reaper.ReadProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if sig, stopped, err := reaper.StopSignal(pid); err != nil || stopped {
		t.Fatalf("running child: StopSignal = %v, %v, %v; want not stopped", sig, stopped, err)
	}
	for _, stop := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGSTOP} {
		if err := syscall.Kill(pid, stop); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the child to report "+stop.String(), func() bool {
			sig, stopped, _ := reaper.StopSignal(pid)
			return stopped && sig == stop
		})
		if sig, stopped, _ := reaper.StopSignal(pid); !stopped || sig != stop {
			t.Fatalf("asked again: StopSignal = %v, %v; want %v, still there (WNOWAIT)", sig, stopped, stop)
		}
		if st := reaper.State(p); st != 'T' {
			t.Errorf("State(%d) = %q while it is stopped by %v, want T", pid, st, stop)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the child to run again", func() bool {
			_, stopped, _ := reaper.StopSignal(pid)
			return !stopped && reaper.State(p) != 'T'
		})
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exits []reaper.Exit
	waitFor(t, "Reap to collect the child", func() bool {
		e, err := reaper.Reap()
		if err != nil {
			t.Fatal(err)
		}
		exits = append(exits, e...)
		return len(exits) > 0
	})
	if exits[0].Pid != pid || !exits[0].Status.Signaled() || exits[0].Status.Signal() != syscall.SIGTERM {
		t.Errorf("Reap = %+v, want pid %d killed by TERM", exits, pid)
	}
	cmd.Process.Release()
	if _, stopped, err := reaper.StopSignal(pid); stopped || err != nil {
		t.Errorf("reaped child: StopSignal = %v, %v; want false, nil", stopped, err)
	}
}

// TestStateChecksStartTime: a Process whose pid now names another process
// (a different start time) reads as gone.
func TestStateChecksStartTime(t *testing.T) {
	cmd := startSleep(t)
	p, err := reaper.ReadProcess(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sleep to stop", func() bool { return reaper.State(p) == 'T' })
	other := p
	other.StartTime++
	if st := reaper.State(other); st != 0 {
		t.Errorf("State with a wrong start time = %q, want 0 (gone)", st)
	}
	_ = syscall.Kill(p.Pid, syscall.SIGCONT)
}
