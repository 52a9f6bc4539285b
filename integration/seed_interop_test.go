package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

// seedLockScript is a run lock written from seed 000 alone, in Python, as
// its users have it: O_CREAT|O_EXCL + JSON, TTL reclaim, release by lock_id.
func seedLockScript(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "seed000", "run_lock.py")
}

func seedCommand(t *testing.T, dir string, ttlSeconds int, args ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatalf("python3 is needed for the seed interop tests (.ci/run installs it): %v", err)
	}
	cmd := exec.Command("python3", append([]string{seedLockScript(t)}, args...)...)
	cmd.Env = append(withoutVar(testEnv(t), "WITHLOCK_DIR"), "NEXUSCORE_RUN_LOCK_DIR="+dir, "NEXUSCORE_RUN_LOCK_TTL_SECONDS="+strconv.Itoa(ttlSeconds))
	return cmd
}

// A live lock of the seed's writer is respected: withlock exits 75 naming
// its pid, and leaves the file alone.
func TestSeedWriterLiveLockIsRespected(t *testing.T) {
	dir := t.TempDir()
	holder := seedCommand(t, dir, 60, "hold", "r-42", "60")
	startCommand(t, holder)
	lockFile := filepath.Join(dir, locks.Key("r-42")+".lock")
	waitFor(t, defaultDeadline, func() bool { out, _ := outputOf(holder); return strings.HasPrefix(out, "ok ") }, "the seed writer to take the lock")
	before, _ := os.ReadFile(lockFile)

	_, stderr, code := runWithlock(t, "run", "--dir", dir, "r-42", "--", "true")
	if code != 75 || !strings.Contains(stderr, "pid "+strconv.Itoa(holder.Process.Pid)) {
		t.Fatalf("withlock against a live seed lock: exit %d, stderr %q; want 75 naming pid %d", code, stderr, holder.Process.Pid)
	}
	if after, _ := os.ReadFile(lockFile); string(after) != string(before) {
		t.Fatal("withlock changed the seed writer's lock file")
	}
	holder.Process.Signal(syscall.SIGTERM)
	waitExit(t, holder, defaultDeadline)
}

// An expired lock of the seed's writer is reclaimed: moved to .stale.<ts>
// and taken, at its expiry (the waiter wakes at expires_at).
func TestSeedWriterExpiredLockIsReclaimed(t *testing.T) {
	dir := t.TempDir()
	acquire := seedCommand(t, dir, 1, "acquire", "r-43")
	if out, err := acquire.Output(); err != nil || !strings.HasPrefix(string(out), "ok ") {
		t.Fatalf("seed writer: %q, %v", out, err)
	}
	start := time.Now()
	_, stderr, code := runWithlock(t, "run", "--dir", dir, "--wait", "20s", "r-43", "--", "true")
	if code != 0 {
		t.Fatalf("withlock after the seed lock expired: exit %d, stderr %q", code, stderr)
	}
	stale, _ := filepath.Glob(filepath.Join(dir, locks.Key("r-43")+".lock.stale.*"))
	if len(stale) != 1 {
		t.Fatalf("stale files %v, want the seed's lock moved aside once", stale)
	}
	t.Logf("took the expired seed lock after %v (TTL 1 s)", time.Since(start).Round(time.Millisecond))
}

// withlock's lock blocks the seed's writer: it reports LOCK_HELD.
func TestWithlockBlocksSeedWriter(t *testing.T) {
	dir := t.TempDir()
	holder := startWithlock(t, "run", "--dir", dir, "r-44", "--", "sleep", "30")
	lockFile := filepath.Join(dir, locks.Key("r-44")+".lock")
	waitFor(t, defaultDeadline, func() bool { _, err := os.Stat(lockFile); return err == nil }, "withlock to take the lock")
	out, err := seedCommand(t, dir, 30, "acquire", "r-44").Output()
	if strings.TrimSpace(string(out)) != "conflict LOCK_HELD" {
		t.Fatalf("seed writer against withlock's lock: %q, %v; want conflict LOCK_HELD", out, err)
	}
	holder.Process.Signal(syscall.SIGTERM)
	if code := waitExit(t, holder, defaultDeadline); code != 143 {
		t.Fatalf("holder exit %d after TERM, want 143", code)
	}
	if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
		t.Fatalf("lock file after the holder ended: %v", err)
	}
}
