package integration

// Scorecard row "a signal ends a wait cleanly": withlock subscribes to
// signals alongside its start-up (supervisor.NotifyAsync) and must not block
// in a lock wait before the subscription is in place. TERM, HUP and USR1
// sent the moment a waiter reports "waiting" end the wait with 128+N (an
// exit, not a death by the signal's default action), and the command never
// runs. It is checked on the release build, on a build whose subscription
// is held back 300 ms (the wait must wait for it), and — the negative
// control — on a build that also blocks without waiting for it, where the
// same signals get Go's default for an unsubscribed signal: TERM and HUP
// kill withlock, USR1 is dropped and the wait goes on.

import (
	"fmt"
	"github.com/withlock/withlock/internal/failpoint"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	tagSlowSubscribe     = failpoint.SlowSubscribe    // the signal subscription is held back 300 ms
	tagWaitUnsubscribed  = failpoint.WaitUnsubscribed // the same, and a lock wait does not wait for it
	waitSignalRunID      = "wait-signal"
	waitSignalHoldFor    = "60"
	waitSignalWaitFor    = "1m"
	waitSignalEventMatch = `"event":"waiting"`
)

// waitSignalOutcome is how one waiter ended after signal sig.
type waitSignalOutcome struct {
	sig      syscall.Signal
	exited   bool // ended by exit(2), not by the signal's default action
	code     int  // exit code, or 128+N for a death by signal N
	ranChild bool // the command ran
	stuck    bool // still waiting 5 s after the signal (then KILLed)
}

// clean is what the row asks of a waiter ended by sig.
func (o waitSignalOutcome) clean() bool {
	return o.exited && o.code == 128+int(o.sig) && !o.ranChild && !o.stuck
}

func (o waitSignalOutcome) String() string {
	how := "died of the signal"
	switch {
	case o.stuck:
		how = "went on waiting (the signal was lost)"
	case o.exited:
		how = "exited"
	}
	return fmt.Sprintf("%v: %s, status %d, command ran: %v", o.sig, how, o.code, o.ranChild)
}

// waitSignalRows holds the lock with the release build and, for each
// signal, starts a waiter with bin, sends the signal as soon as the waiter
// reports that it waits, and returns how each waiter ended.
func waitSignalRows(t *testing.T, bin string) []waitSignalOutcome {
	t.Helper()
	dir := t.TempDir()
	holder := startWithlock(t, "run", "--dir", dir, waitSignalRunID, "--", "sleep", waitSignalHoldFor)
	waitFor(t, 10*time.Second, func() bool {
		_, err := os.Stat(lockFile(dir, waitSignalRunID))
		return err == nil
	}, "the holder's lock file")
	var out []waitSignalOutcome
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1} {
		marker := filepath.Join(dir, "ran-"+strings.ToLower(sig.String()))
		cmd := exec.Command(bin, "run", "--dir", dir, "--wait", waitSignalWaitFor, "--log-format", "json",
			waitSignalRunID, "--", "touch", marker)
		cmd.Env = testEnv(t)
		startCommand(t, cmd)
		waitFor(t, 10*time.Second, func() bool {
			_, stderr := outputOf(cmd)
			return strings.Contains(stderr, waitSignalEventMatch) || exited(t, cmd)
		}, "the waiter's waiting event")
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatalf("signal %v: %v", sig, err)
		}
		// A signal Go's runtime drops while unsubscribed (USR1) leaves
		// the waiter waiting: after 5 s it is KILLed and counted as such.
		o, err := startedOf(t, cmd).wait(5 * time.Second)
		if cmd.ProcessState == nil {
			t.Fatalf("%v", err)
		}
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		_, statErr := os.Stat(marker)
		out = append(out, waitSignalOutcome{sig: sig, exited: ws.Exited(), code: o.code, ranChild: statErr == nil, stuck: err != nil})
	}
	if exited(t, holder) {
		t.Fatalf("the holder ended during the row")
	}
	return out
}

func TestScorecardSignalEndsWait(t *testing.T) {
	t.Parallel()
	builds := []struct{ name, bin string }{
		{"release build", withlockBin},
		{"subscription held back 300 ms", taggedBinary(t, tagSlowSubscribe)},
	}
	for _, b := range builds {
		for _, o := range waitSignalRows(t, b.bin) {
			if !o.clean() {
				t.Errorf("%s: %v; want an exit with %d and the command not run", b.name, o, 128+int(o.sig))
			}
		}
	}
}

func TestScorecardSignalEndsWaitNegativeControl(t *testing.T) {
	t.Parallel()
	broken := 0
	for _, o := range waitSignalRows(t, taggedBinary(t, tagWaitUnsubscribed)) {
		if !o.clean() {
			broken++
		}
		t.Logf("control: %v", o)
	}
	if broken == 0 {
		t.Errorf("a build that blocks before its signal subscription passed the row: the row cannot fail")
	}
}
