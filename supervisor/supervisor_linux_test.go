package supervisor_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/supervisor"
)

// trapChild starts a helper supervising the trap role and waits until the
// trap is armed; it returns the helper and the trap's record file.
func trapChild(t *testing.T, env ...string) (*helper, string) {
	t.Helper()
	trapFile := filepath.Join(t.TempDir(), "trap")
	h := startHelper(t, helperOpts{argv: []string{os.Args[0], trapArg},
		env: append([]string{"TRAP_FILE=" + trapFile, "HELPER_GRACE=10s"}, env...)})
	waitFor(t, defaultWait, "trap armed", func() bool { return len(readLines(trapFile)) > 0 })
	return h, trapFile
}

// waitRecorded waits until the trap recorded sig.
func waitRecorded(t *testing.T, trapFile string, sig syscall.Signal) {
	t.Helper()
	want := strconv.Itoa(int(sig))
	waitFor(t, 10*time.Second, "child to record "+sig.String(), func() bool {
		return slices.Contains(readLines(trapFile), want)
	})
}

// TestForwardedSignalsReachChild sends each caught signal but the
// job-control stops to the supervising process and waits for the child to
// record it. None crashes the supervisor: the ones Go would turn into a
// crash dump (ABRT, SEGV, BUS, ILL, FPE, TRAP, STKFLT, SYS sent with kill)
// are forwarded like the rest, and the run ends with the child's status.
func TestForwardedSignalsReachChild(t *testing.T) {
	for _, s := range supervisor.Caught {
		sig := s.(syscall.Signal)
		if supervisor.StopsJob(sig) {
			continue // jobctl_linux_test.go
		}
		t.Run(sig.String(), func(t *testing.T) {
			h, trapFile := trapChild(t)
			h.signal(t, sig)
			waitRecorded(t, trapFile, sig)
			if sig != syscall.SIGTERM && sig != syscall.SIGINT {
				h.signal(t, syscall.SIGTERM) // only forwarded: end the run
			}
			r := h.wait(t)
			if r.Status != 3 || r.Reason != "exited" {
				t.Errorf("status %d (%s), want 3 (exited): the child's own status", r.Status, r.Reason)
			}
		})
	}
}

// TestSignalQueuedBeforeRunIsDelivered raises USR1 once subscribed and before
// Run (as if it arrived during the lock wait or the spawn). The child gets
// it as soon as it exists, before it could install a handler, so it dies of
// it: status 128+USR1 instead of sleeping for a minute.
func TestSignalQueuedBeforeRunIsDelivered(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sleep", "60"},
		env: []string{"HELPER_RAISE=" + strconv.Itoa(int(syscall.SIGUSR1)), "HELPER_GRACE=1s"}})
	r := h.wait(t)
	if want := 128 + int(syscall.SIGUSR1); r.Status != want || r.Reason != "signaled" {
		t.Errorf("status %d (%s), want %d (signaled)", r.Status, r.Reason, want)
	}
}

// startTermIgnorer supervises a shell that survives TERM (its sleeps die of
// it and the loop starts another) and waits until it runs. It returns the
// file the shell creates when a TERM reaches it.
func startTermIgnorer(t *testing.T, grace time.Duration) (h *helper, gotTerm string) {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "child-ready")
	h = startHelper(t, helperOpts{
		argv: []string{"sh", "-c", `trap ': > "$CHILD_GOT_TERM"' TERM; : > "$CHILD_READY"; while :; do sleep 0.05; done`},
		env: []string{"HELPER_GRACE=" + grace.String(), "CHILD_READY=" + ready,
			"CHILD_GOT_TERM=" + filepath.Join(dir, "child-got-term")},
	})
	waitFor(t, defaultWait, "child ready", func() bool { _, err := os.Stat(ready); return err == nil })
	return h, filepath.Join(dir, "child-got-term")
}

// TestTermIgnoringChildIsKilledAfterGrace: TERM to withlock is forwarded, the
// child ignores it, KILL follows the grace, and Run returns soon after.
func TestTermIgnoringChildIsKilledAfterGrace(t *testing.T) {
	const grace = 500 * time.Millisecond
	h, _ := startTermIgnorer(t, grace)
	start := time.Now()
	h.signal(t, syscall.SIGTERM)
	r := h.wait(t)
	took := time.Since(start)
	t.Logf("TERM → exit with a TERM-ignoring child and grace %v: %v (Run itself: %d ms)", grace, took, r.ElapsedMS)
	if r.Status != 128+int(syscall.SIGKILL) || r.Reason != "signaled" {
		t.Errorf("status %d (%s), want 137 (signaled: KILL after the grace)", r.Status, r.Reason)
	}
	if took < grace {
		t.Errorf("exited after %v, before the grace %v ran out", took, grace)
	}
	if took > grace+3*time.Second {
		t.Errorf("exited after %v, want within grace+1s (bound here grace+3s)", took)
	}
	if left := withToken(h.token); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}

// TestSecondTermKillsAtOnce: during the grace a second TERM kills now.
func TestSecondTermKillsAtOnce(t *testing.T) {
	h, got := startTermIgnorer(t, time.Minute)
	h.signal(t, syscall.SIGTERM)
	// The INT must come second: sent at once, both can be pending in Go's
	// runtime together, which hands them over in signal-number order (INT
	// first, forwarded, and the child dies of it).
	waitFor(t, defaultWait, "the child to get the forwarded TERM", func() bool { _, err := os.Stat(got); return err == nil })
	h.signal(t, syscall.SIGINT)
	r := h.wait(t)
	if r.Status != 137 {
		t.Errorf("status %d, want 137", r.Status)
	}
	if r.ElapsedMS > 30_000 {
		t.Errorf("Run took %d ms: the second signal did not cut the 60s grace", r.ElapsedMS)
	}
}

// TestStoppedChildDiesOfTerm: a stopped child (Ctrl-Z) holds a TERM pending;
// teardown follows it with CONT, so the child dies of the TERM (143) rather
// than sitting out the grace until KILL (137).
func TestStoppedChildDiesOfTerm(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sleep", "300"}, env: []string{"HELPER_GRACE=10s"}})
	h.waitReady(t)
	child := h.childPid(t)
	if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, defaultWait, "the child to stop", func() bool { return procState(child) == "T" })
	h.signal(t, syscall.SIGTERM)
	r := h.wait(t)
	if r.Status != 143 || r.Reason != "signaled" {
		t.Errorf("status %d (%s), want 143 (signaled): the stopped child never saw the TERM", r.Status, r.Reason)
	}
}
