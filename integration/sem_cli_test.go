package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The --max and --shared command line: bad values are usage errors (64),
// a full semaphore is a conflict (75) naming the holders, holders that
// disagree about N get one line naming both values (64), and the child is
// told its slot.
func TestSemaphoreCommandLine(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--dir", dir, "--max", "0", "b", "true"},
		{"run", "--dir", dir, "--max", "-2", "b", "true"},
		{"run", "--dir", dir, "--max", "2", "--shared", "b", "true"},
		{"run", "--dir", dir, "--max", "70000", "b", "true"},
	} {
		_, stderr, code := runWithlock(t, args...)
		if code != 64 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 64 and one line", args, code, stderr)
		}
	}

	stdout, _, code := runWithlock(t, "run", "--dir", dir, "--max", "3", "b", "--", "sh", "-c", `echo "$WITHLOCK_RUN_ID $WITHLOCK_SLOT $WITHLOCK_MAX $WITHLOCK_FENCING_TOKEN"`)
	var slot, max int
	var runID string
	var token uint64
	if n, _ := fmt.Sscan(stdout, &runID, &slot, &max, &token); code != 0 || n != 4 || runID != "b" || slot != 0 || max != 3 || token == 0 {
		t.Fatalf("child env: exit %d, %q; want \"b 0 3 <token>\"", code, stdout)
	}

	marker := filepath.Join(t.TempDir(), "running")
	holder := startWithlock(t, "run", "--dir", dir, "--max", "1", "b", "--", "sh", "-c", `touch "$0"; exec sleep 300`, marker)
	waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(marker); return err == nil }, "the holder's command")

	_, stderr, code := runWithlock(t, "run", "--dir", dir, "--max", "1", "b", "true")
	if code != 75 || !strings.Contains(stderr, `run "b": all 1 slots are held (pids `) {
		t.Errorf("full semaphore: exit %d, stderr %q; want 75 naming the holder", code, stderr)
	}
	_, stderr, code = runWithlock(t, "run", "--dir", dir, "--max", "3", "--wait", "5", "b", "true")
	if code != 64 || !strings.Contains(stderr, `run "b": --max 3 disagrees with --max 1 of its running holders (pid `) ||
		strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("--max 3 against --max 1: exit %d, stderr %q; want 64, one line naming both", code, stderr)
	}
	_, stderr, code = runWithlock(t, "run", "--dir", dir, "--shared", "b", "true")
	if code != 64 || !strings.Contains(stderr, "--shared disagrees with --max 1") {
		t.Errorf("--shared against --max 1: exit %d, stderr %q", code, stderr)
	}
	// The plain run of the same id is exclusive: it waits for the slot
	// holder; without --wait it is a conflict naming it.
	_, stderr, code = runWithlock(t, "run", "--dir", dir, "b", "true")
	if code != 75 || !strings.Contains(stderr, `run "b" is locked by pid `) {
		t.Errorf("exclusive against a slot holder: exit %d, stderr %q", code, stderr)
	}
	holder.Process.Signal(syscall.SIGTERM)
	waitExit(t, holder, 20*time.Second)
}

// status shows each slot holder under the user's run id; break --slot K
// refuses a live slot naming it, --signal frees that slot alone, and a
// slot that does not exist is a usage error.
func TestSemaphoreStatusAndBreak(t *testing.T) {
	dir := t.TempDir()
	marks := t.TempDir()
	var holders []*exec.Cmd
	for i := 0; i < 2; i++ {
		h := startWithlock(t, "run", "--dir", dir, "--max", "2", "b", "--", "sh", "-c", `touch "$0/$WITHLOCK_SLOT"; exec sleep 300`, marks)
		holders = append(holders, h)
		waitFor(t, 10*time.Second, func() bool { n, _ := os.ReadDir(marks); return len(n) == i+1 }, "holder running")
	}
	stdout, _, code := runWithlock(t, "status", "--dir", dir, "--json", "b")
	var st struct {
		Locks []struct {
			RunID string `json:"run_id"`
			Mode  string `json:"mode"`
			Slot  int    `json:"slot"`
			State string `json:"state"`
			Pid   int    `json:"pid"`
		} `json:"locks"`
		Semaphores []struct {
			RunID   string `json:"run_id"`
			Max     int    `json:"max"`
			Holders int    `json:"holders"`
		} `json:"semaphores"`
	}
	if err := json.Unmarshal([]byte(stdout), &st); err != nil || code != 0 {
		t.Fatalf("status --json: exit %d, %v\n%s", code, err, stdout)
	}
	pidOfSlot := map[int]int{}
	for _, l := range st.Locks {
		if l.Mode == "max" && l.RunID == "b" && l.State == "held" {
			pidOfSlot[l.Slot] = l.Pid
		}
	}
	if len(pidOfSlot) != 2 || len(st.Semaphores) != 1 || st.Semaphores[0].Holders != 2 || st.Semaphores[0].Max != 2 {
		t.Fatalf("status: %+v", st)
	}
	table, _, _ := runWithlock(t, "status", "--dir", dir)
	if !strings.Contains(table, "b [slot 0 of 2]") || !strings.Contains(table, "b [slot 1 of 2]") {
		t.Errorf("status table:\n%s", table)
	}

	if _, stderr, code := runWithlock(t, "break", "--dir", dir, "--slot", "2", "b"); code != 64 || !strings.Contains(stderr, "has slots 0…1 (--max 2)") {
		t.Errorf("break --slot 2: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runWithlock(t, "break", "--dir", dir, "--slot", "1", "b"); code != 75 || !strings.Contains(stderr, `run "b" slot 1 is held by pid `) {
		t.Errorf("break --slot 1 of a live holder: exit %d, %q", code, stderr)
	}
	stdout, stderr, code := runWithlock(t, "break", "--dir", dir, "--signal", "--slot", "1", "b")
	if code != 0 || !strings.Contains(stdout, `released the lock of run "b" slot 1 after SIGTERM`) {
		t.Fatalf("break --signal --slot 1: exit %d, %q %q", code, stdout, stderr)
	}
	// Slot 1's holder is gone; slot 0's still runs.
	for _, h := range holders {
		if h.Process.Pid == pidOfSlot[1] {
			waitExit(t, h, 20*time.Second)
		} else if exited(t, h) {
			t.Error("break --slot 1 ended slot 0's holder too")
		}
	}
	stdout, _, code = runWithlock(t, "run", "--dir", dir, "--max", "2", "b", "--", "sh", "-c", `echo $WITHLOCK_SLOT`)
	if code != 0 || stdout != "1\n" {
		t.Errorf("after the break: exit %d, slot %q, want slot 1", code, stdout)
	}
	for _, h := range holders {
		h.Process.Signal(syscall.SIGTERM)
		waitExit(t, h, 20*time.Second)
	}
}
