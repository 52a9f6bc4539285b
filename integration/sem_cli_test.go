package integration

import (
	"os"
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
	} {
		_, stderr, code := runWithlock(t, args...)
		if code != 64 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 64 and one line", args, code, stderr)
		}
	}

	stdout, _, code := runWithlock(t, "run", "--dir", dir, "--max", "3", "b", "--", "sh", "-c", `echo "$WITHLOCK_RUN_ID $WITHLOCK_SLOT $WITHLOCK_MAX $WITHLOCK_FENCING_TOKEN"`)
	if code != 0 || stdout != "b 0 3 1\n" {
		t.Fatalf("child env: exit %d, %q; want \"b 0 3 1\"", code, stdout)
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
