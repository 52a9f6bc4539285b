package supervisor

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/internal/proc"
)

// TestFollowStopLeavesSigstopAndNotesExit: a main child stopped by SIGSTOP
// (a debugger, an operator) is left stopped and withlock runs on; once it
// has died, followStop, which takes what wait4 reports, notes its exit
// status as reap would, so none is lost to it. (A job-control stop, which
// stops withlock itself, is TestChildJobStopStopsSupervisor's.)
func TestFollowStopLeavesSigstopAndNotesExit(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	s := &supervision{pid: pid, pgid: pid, log: zerolog.Nop(), cause: noCause}
	t.Cleanup(func() {
		if !s.exited { // once reaped, its pid may be another process's
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	state := func() byte { p, _ := proc.Read(pid); return p.State }

	s.followStop() // running: nothing to report
	if s.exited || s.resumedBy {
		t.Fatalf("running child: exited %v, suspended %v", s.exited, s.resumedBy)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the child to stop", func() bool { return state() == 'T' })
	s.followStop()
	if s.exited || s.resumedBy || state() != 'T' {
		t.Fatalf("SIGSTOPped child: exited %v, suspended %v, state %c; want it left stopped", s.exited, s.resumedBy, state())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the child to die", func() bool { return state() == 'Z' })
	s.followStop()
	if !s.exited || !s.status.Signaled() || s.status.Signal() != syscall.SIGKILL {
		t.Fatalf("dead child: exited %v, status %v; want its KILL noted", s.exited, s.status)
	}
	cmd.Process.Release()
	if exits, err := reapAll(); err != nil || len(exits) != 0 {
		t.Errorf("reapAll after followStop took the status: %+v, %v; want nothing left", exits, err)
	}
}
