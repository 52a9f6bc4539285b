package supervisor

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/withlock/withlock/internal/proc"
)

// TestStopSignalTakesNothing: a child stopped by TSTP and then by STOP is
// reported with the signal each time, as often as asked; continued it
// reports nothing; and its exit status is still reapAll's afterwards.
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
	state := func() byte { p, _ := proc.Read(pid); return p.State }
	if sig, stopped, err := stopSignal(pid); err != nil || stopped {
		t.Fatalf("running child: StopSignal = %v, %v, %v; want not stopped", sig, stopped, err)
	}
	for _, stop := range []syscall.Signal{syscall.SIGTSTP, syscall.SIGSTOP} {
		if err := syscall.Kill(pid, stop); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the child to report "+stop.String(), func() bool {
			sig, stopped, _ := stopSignal(pid)
			return stopped && sig == stop
		})
		if sig, stopped, _ := stopSignal(pid); !stopped || sig != stop {
			t.Fatalf("asked again: StopSignal = %v, %v; want %v, still there (WNOWAIT)", sig, stopped, stop)
		}
		if st := state(); st != 'T' {
			t.Errorf("State(%d) = %q while it is stopped by %v, want T", pid, st, stop)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the child to run again", func() bool {
			_, stopped, _ := stopSignal(pid)
			return !stopped && state() != 'T'
		})
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exits []exit
	waitUntil(t, "reapAll to collect the child", func() bool {
		e, err := reapAll()
		if err != nil {
			t.Fatal(err)
		}
		exits = append(exits, e...)
		return len(exits) > 0
	})
	if exits[0].pid != pid || !exits[0].status.Signaled() || exits[0].status.Signal() != syscall.SIGTERM {
		t.Errorf("reapAll = %+v, want pid %d killed by TERM", exits, pid)
	}
	cmd.Process.Release()
	if _, stopped, err := stopSignal(pid); stopped || err != nil {
		t.Errorf("reaped child: StopSignal = %v, %v; want false, nil", stopped, err)
	}
}
