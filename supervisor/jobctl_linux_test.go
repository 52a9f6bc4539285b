package supervisor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ticker is a command whose tree keeps writing: the main child appends to
// main.ticks and a setsid'd daemon, outside the child's process group, to
// daemon.ticks, every 20 ms. A tick file that does not grow means that part
// of the tree does not run.
type ticker struct {
	h                    *helper
	mainTicks, daemonTks string
	verify               string // HELPER_VERIFY_FILE: create it to break the lock
}

func startTicker(t *testing.T, env ...string) *ticker {
	t.Helper()
	dir := t.TempDir()
	tk := &ticker{mainTicks: filepath.Join(dir, "main.ticks"), daemonTks: filepath.Join(dir, "daemon.ticks"),
		verify: filepath.Join(dir, "broken")}
	script := filepath.Join(dir, "tick.sh")
	body := `setsid sh -c 'while :; do echo d >> "$1"; sleep 0.02; done' sh "$2" &
while :; do echo m >> "$1"; sleep 0.02; done
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	tk.h = startHelper(t, helperOpts{argv: []string{"sh", script, tk.mainTicks, tk.daemonTks},
		env: append([]string{"HELPER_GRACE=2s", "HELPER_VERIFY_FILE=" + tk.verify}, env...)})
	tk.h.waitReady(t)
	tk.waitGrowing(t, "the tree to start ticking")
	return tk
}

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// waitGrowing waits until both tick files grow.
func (tk *ticker) waitGrowing(t *testing.T, what string) {
	t.Helper()
	m, d := size(tk.mainTicks), size(tk.daemonTks)
	waitFor(t, defaultWait, what, func() bool { return size(tk.mainTicks) > m && size(tk.daemonTks) > d })
}

// assertStill checks that neither tick file grows over a few tick periods.
func (tk *ticker) assertStill(t *testing.T, what string) {
	t.Helper()
	m, d := size(tk.mainTicks), size(tk.daemonTks)
	// An observation window, not a wait for a condition: a running tree
	// ticks 15 times in it.
	time.Sleep(300 * time.Millisecond)
	if m2, d2 := size(tk.mainTicks), size(tk.daemonTks); m2 != m || d2 != d {
		t.Errorf("%s: the tree ran on (main ticks %d → %d, daemon ticks %d → %d)", what, m, m2, d, d2)
	}
}

func (tk *ticker) verifyCalls() int {
	b, _ := os.ReadFile(tk.verify + ".calls")
	return strings.Count(string(b), "verify")
}

// waitState waits until pid's state letter is want.
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	waitFor(t, defaultWait, fmt.Sprintf("pid %d in state %s", pid, want), func() bool { return procState(pid) == want })
}

// TestTstpStopsTreeThenSupervisor: a TSTP sent to the supervisor stops the
// child's group (forwarded), the daemon outside it (SIGSTOP) and then the
// supervisor itself; nothing of the tree runs while it is stopped. CONT
// checks the lock (Verify) and continues the whole tree.
func TestTstpStopsTreeThenSupervisor(t *testing.T) {
	tk := startTicker(t)
	tk.h.signal(t, syscall.SIGTSTP)
	waitState(t, tk.h.cmd.Process.Pid, "T")
	tk.assertStill(t, "supervisor stopped by TSTP")
	calls := tk.verifyCalls()
	tk.h.signal(t, syscall.SIGCONT)
	tk.waitGrowing(t, "the tree to tick again after CONT")
	if got := tk.verifyCalls(); got <= calls {
		t.Errorf("Verify called %d times before CONT and %d after, want at least one call on resume", calls, got)
	}
	tk.h.signal(t, syscall.SIGTERM)
	if r := tk.h.wait(t); r.Status != 143 || r.Leftovers != 0 {
		t.Errorf("status %d with %d leftovers, want 143 and none", r.Status, r.Leftovers)
	}
}

// TestResumeAfterLostLockKillsBeforeRunning: the lock is broken while the
// supervisor is stopped; continued, it KILLs the stopped tree before any of
// it runs again, and the status is 76.
func TestResumeAfterLostLockKillsBeforeRunning(t *testing.T) {
	tk := startTicker(t)
	tk.h.signal(t, syscall.SIGTSTP)
	waitState(t, tk.h.cmd.Process.Pid, "T")
	if err := os.WriteFile(tk.verify, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	m, d := size(tk.mainTicks), size(tk.daemonTks)
	tk.h.signal(t, syscall.SIGCONT)
	r := tk.h.wait(t)
	if r.Status != 76 || r.Reason != "lock lost" || r.Leftovers != 0 {
		t.Errorf("status %d (%s), %d leftovers; want 76 (lock lost) and none", r.Status, r.Reason, r.Leftovers)
	}
	if m2, d2 := size(tk.mainTicks), size(tk.daemonTks); m2 != m || d2 != d {
		t.Errorf("the tree ran after the resume (main ticks %d → %d, daemon %d → %d)", m, m2, d, d2)
	}
}

// TestChildJobStopStopsSupervisor: the child stopped by a TSTP of its own
// (Ctrl-Z on the terminal it holds goes to its group, not to withlock) makes
// the supervisor stop too, so the shell that started it sees the job
// stopped; CONT continues both. A SIGSTOP of the child does not
// (TestStoppedChildDiesOfTerm).
func TestChildJobStopStopsSupervisor(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sleep", "300"}, env: []string{"HELPER_GRACE=2s"}})
	h.waitReady(t)
	child := h.childPid(t)
	if err := syscall.Kill(child, syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	waitState(t, h.cmd.Process.Pid, "T")
	h.signal(t, syscall.SIGCONT)
	waitFor(t, defaultWait, "the child to run again", func() bool { return procState(child) == "S" })
	h.signal(t, syscall.SIGTERM)
	if r := h.wait(t); r.Status != 143 {
		t.Errorf("status %d, want 143", r.Status)
	}
}

// TestRepeatedTermKeepsGrace: a TERM during the grace (an outer withlock
// forwarding its own, under KillMode=control-group) is the same stop: the
// child's TERM trap runs to its end (a sleep in it is not cut by a second
// TERM) and its own status is passed through.
func TestRepeatedTermKeepsGrace(t *testing.T) {
	dir := t.TempDir()
	ready, trapped, done := filepath.Join(dir, "ready"), filepath.Join(dir, "trapped"), filepath.Join(dir, "done")
	h := startHelper(t, helperOpts{
		argv: []string{"sh", "-c", `trap ': > "$2"; sleep 0.5; : > "$3"; exit 7' TERM; : > "$1"; while :; do sleep 0.05; done`,
			"sh", ready, trapped, done},
		env: []string{"HELPER_GRACE=10s"},
	})
	waitFor(t, defaultWait, "child ready", func() bool { _, err := os.Stat(ready); return err == nil })
	h.signal(t, syscall.SIGTERM)
	waitFor(t, defaultWait, "the trap to start", func() bool { _, err := os.Stat(trapped); return err == nil })
	h.signal(t, syscall.SIGTERM)
	r := h.wait(t)
	if _, err := os.Stat(done); err != nil || r.Status != 7 {
		t.Errorf("status %d, trap finished: %v; want 7 and the trap's file", r.Status, err == nil)
	}
}

// TestResumeContinuesOnce: the CONT that resumes a stopped supervisor
// reaches the child once (resume continues the tree; the CONT notification
// that follows is not forwarded again). The child catches TSTP (it records
// it and stays up), so the supervisor stops it with SIGSTOP after stopWait.
func TestResumeContinuesOnce(t *testing.T) {
	h, trapFile := trapChild(t)
	h.signal(t, syscall.SIGTSTP)
	waitRecorded(t, trapFile, syscall.SIGTSTP)
	waitState(t, h.cmd.Process.Pid, "T")
	h.signal(t, syscall.SIGCONT)
	waitRecorded(t, trapFile, syscall.SIGCONT)
	// Anything forwarded after the CONT is recorded before USR2, which is
	// sent only once USR1 is in.
	h.signal(t, syscall.SIGUSR1)
	waitRecorded(t, trapFile, syscall.SIGUSR1)
	h.signal(t, syscall.SIGUSR2)
	waitRecorded(t, trapFile, syscall.SIGUSR2)
	conts := 0
	for _, l := range readLines(trapFile) {
		if l == fmt.Sprint(int(syscall.SIGCONT)) {
			conts++
		}
	}
	if conts != 1 {
		t.Errorf("the child got %d CONTs for one resume, want 1: %v", conts, readLines(trapFile))
	}
	h.signal(t, syscall.SIGTERM)
	h.wait(t)
}
