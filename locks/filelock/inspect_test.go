package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

// holderPayload is a payload for runID held by pid on this host, boot and
// pid namespace (start 0: not compared), valid for ttl from now.
func holderPayload(r *RunLocker, runID string, pid int, ttl time.Duration) locks.Payload {
	now := time.Now()
	return locks.Payload{
		RunID: runID, LockID: randomID(), Pid: pid,
		CreatedAt: locks.Epoch(now.Add(-time.Minute)), ExpiresAt: locks.Epoch(now.Add(ttl)),
		Host: r.self.Host, BootID: r.self.BootID, PidNS: r.self.PidNS,
		Command: "sleep 60", FencingToken: 7,
	}
}

func findLock(t *testing.T, rep *DirReport, runID string) LockInfo {
	t.Helper()
	for _, l := range rep.Locks {
		if l.Key == locks.Key(runID) {
			return l
		}
	}
	t.Fatalf("no lock for %q in %+v", runID, rep.Locks)
	return LockInfo{}
}

func TestInspectJudgesEveryLock(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	held := mustAcquire(t, r, "held") // held by this test process: alive
	defer held.Release()

	dead := holderPayload(r, "dead", deadPid(t), time.Minute)
	writeLockFile(t, r.LockPath("dead"), dead, time.Time{})
	expired := holderPayload(r, "expired", os.Getpid(), -time.Second)
	writeLockFile(t, r.LockPath("expired"), expired, time.Time{})
	remote := holderPayload(r, "remote", 1, time.Minute)
	remote.Host = "elsewhere"
	writeLockFile(t, r.LockPath("remote"), remote, time.Time{})
	writeLockFile(t, r.LockPath("torn"), []byte(`{"run_id":`), time.Time{})
	writeLockFile(t, r.LockPath("corrupt"), []byte(`garbage`), time.Now().Add(-time.Hour))
	writeLockFile(t, filepath.Join(dir, "scope.lock"), []byte(`{"allocations":[]}`), time.Time{})

	rep, err := r.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Locks) != 6 {
		t.Fatalf("got %d locks, want 6 (scope.lock is not a run lock): %+v", len(rep.Locks), rep.Locks)
	}
	cases := []struct {
		runID    string
		state    LockState
		reason   StaleReason
		liveness HolderLiveness
	}{
		{"held", StateHeld, NotStale, HolderAlive},
		{"dead", StateStale, StaleDead, HolderDead},
		{"expired", StateStale, StaleExpired, HolderAlive},
		{"remote", StateHeld, NotStale, HolderUnknown},
		{"torn", StateTorn, NotStale, HolderUnknown},
		{"corrupt", StateStale, StaleCorrupt, HolderUnknown},
	}
	for _, c := range cases {
		got := findLock(t, rep, c.runID)
		if got.State != c.state || got.StaleReason != c.reason || got.Liveness != c.liveness {
			t.Errorf("%s: state %q reason %q liveness %q; want %q %q %q",
				c.runID, got.State, got.StaleReason, got.Liveness, c.state, c.reason, c.liveness)
		}
	}
	if got := findLock(t, rep, "held"); got.Payload.Pid != os.Getpid() || got.Payload.RunID != "held" {
		t.Errorf("held: payload %+v", got.Payload)
	}
	// Inspect is read-only: nothing was reclaimed.
	for _, id := range []string{"dead", "expired", "corrupt"} {
		if _, err := os.Stat(r.LockPath(id)); err != nil {
			t.Errorf("%s: %v", id, err)
		}
	}
}

func TestInspectFlagsUnreadableLock(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	if err := os.Symlink("/etc/passwd", r.LockPath("link")); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	got := findLock(t, rep, "link")
	if got.State != StateUnreadable || got.Err == nil {
		t.Fatalf("symlinked lock: %+v", got)
	}
}

func TestInspectListsLeftovers(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	old := holderPayload(r, "job", deadPid(t), -time.Hour)
	stale := r.LockPath("job") + ".stale.1000000000"
	writeLockFile(t, stale, old, time.Time{})
	tmp := r.LockPath("job") + ".tmp.abc"
	writeLockFile(t, tmp, []byte("x"), time.Time{})
	for _, keep := range []string{r.files("job").guard, r.files("job").fence, filepath.Join(dir, "scope.lock.bak")} {
		writeLockFile(t, keep, []byte("1"), time.Time{})
	}

	rep, err := r.Inspect()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Locks) != 0 || len(rep.Leftovers) != 2 {
		t.Fatalf("locks %+v leftovers %+v", rep.Locks, rep.Leftovers)
	}
	s, tm := rep.Leftovers[0], rep.Leftovers[1]
	if s.Kind != LeftoverStale || s.Path != stale || s.RunID != "job" || s.Key != locks.Key("job") || !s.Since.Equal(time.Unix(1000000000, 0)) {
		t.Errorf("stale leftover %+v", s)
	}
	if tm.Kind != LeftoverTemp || tm.Path != tmp || tm.Size != 1 {
		t.Errorf("temp leftover %+v", tm)
	}
}

func TestInspectDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	r := newTestLocker(t, missing, time.Minute)
	rep, err := r.Inspect()
	if err != nil || len(rep.Locks)+len(rep.Leftovers) != 0 {
		t.Fatalf("missing dir: %+v, %v", rep, err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Inspect created the directory: %v", err)
	}

	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_, err = newTestLocker(t, open, time.Minute).Inspect()
	if os.Geteuid() == 0 && err != nil {
		t.Errorf("world-writable dir: %v; root may read any dir", err)
	}
	if os.Geteuid() != 0 && !errors.Is(err, ErrUnsafeDir) {
		t.Errorf("world-writable dir: %v, want ErrUnsafeDir", err)
	}
}
