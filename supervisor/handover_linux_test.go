package supervisor_test

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/supervisor"
)

// handoverRole subscribes (NotifyAsync, Wait), gets a TERM that the
// subscription catches, and then gives its signals up before an exec would
// happen: "handover-real" with Signals.HandOver, "handover-reset" (the
// control) only resetting the dispositions, which loses the caught TERM. It
// then lives on for 3 s and exits 0 if nothing ended it.
func handoverRole(role string) int {
	s := supervisor.NotifyAsync()
	s.Wait()
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	if !testwait.Until(5*time.Second, func() bool { return len(s.C()) > 0 }) {
		return 3 // the subscription never delivered the TERM
	}
	switch role {
	case "handover-real":
		s.HandOver()
	case "handover-reset":
		signal.Reset()
	}
	time.Sleep(3 * time.Second)
	return 0
}

// TestHandOverKeepsACaughtSignal: a signal caught between the subscription
// and an exec backend's exec acts as if it had never been caught (a TERM
// still ends the process); the control shows that resetting alone loses it.
func TestHandOverKeepsACaughtSignal(t *testing.T) {
	run := func(role string) *os.ProcessState {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"="+role)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		return cmd.ProcessState
	}
	ws := run("handover-real").Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("HandOver: the process ended %v; want death by the TERM it had caught", ws)
	}
	ctl := run("handover-reset").Sys().(syscall.WaitStatus)
	if ctl.Signaled() || ctl.ExitStatus() != 0 {
		t.Errorf("control (reset only): the process ended %v; want exit 0 (the caught TERM lost), else the test cannot fail", ctl)
	}
}
