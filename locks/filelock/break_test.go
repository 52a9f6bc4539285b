package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

func TestBreakMovesStaleLockAside(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	p := holderPayload(r, "job", deadPid(t), time.Minute)
	writeLockFile(t, r.LockPath("job"), p, time.Time{})
	fence := r.files("job").fence
	writeLockFile(t, fence, []byte("7\n"), time.Time{})

	b, err := r.Break("job", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if b.Reason != StaleDead || b.Holder.Pid != p.Pid || !strings.HasPrefix(b.MovedTo, r.LockPath("job")+".stale.") {
		t.Fatalf("broken %+v", b)
	}
	if _, err := os.Stat(r.LockPath("job")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock still there: %v", err)
	}
	if got := readPayload(t, b.MovedTo); got.LockID != p.LockID {
		t.Errorf("moved file holds %+v", got)
	}
	if data, err := os.ReadFile(fence); err != nil || string(data) != "7\n" {
		t.Errorf("fence touched: %q %v", data, err)
	}
	// The next acquirer is fenced above the broken holder.
	l := mustAcquire(t, r, "job")
	defer l.Release()
	if l.FencingToken() <= p.FencingToken {
		t.Errorf("token %d after breaking token %d", l.FencingToken(), p.FencingToken)
	}
}

func TestBreakNeverOverwritesEarlierStaleFile(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	fixed := time.Unix(1700000000, 0)
	r.now = func() time.Time { return fixed }
	var moved []string
	for i := 0; i < 3; i++ {
		p := holderPayload(r, "job", deadPid(t), time.Hour)
		p.ExpiresAt = locks.Epoch(fixed.Add(time.Hour))
		writeLockFile(t, r.LockPath("job"), p, time.Time{})
		b, err := r.Break("job", false, "")
		if err != nil {
			t.Fatal(err)
		}
		moved = append(moved, filepath.Base(b.MovedTo))
	}
	want := locks.Key("job") + ".lock.stale.1700000000"
	if moved[0] != want || moved[1] != want+".1" || moved[2] != want+".2" {
		t.Errorf("moved to %q", moved)
	}
}

func TestBreakRefusesLiveHolderUnlessForced(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	l := mustAcquire(t, r, "live")
	remote := holderPayload(r, "remote", 1, time.Minute)
	remote.Host = "elsewhere"
	writeLockFile(t, r.LockPath("remote"), remote, time.Time{})
	writeLockFile(t, r.LockPath("torn"), []byte("{"), time.Time{})

	for id, want := range map[string]string{
		"live":   "alive on this host",
		"remote": "liveness is unknown",
		"torn":   "too fresh",
	} {
		_, err := r.Break(id, false, "")
		var live *LiveHolderError
		if !errors.As(err, &live) || !errors.Is(err, locks.ErrHeld) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want a LiveHolderError saying %q", id, err, want)
		}
		if _, err := os.Stat(r.LockPath(id)); err != nil {
			t.Errorf("%s: refused break moved the lock: %v", id, err)
		}
	}

	b, err := r.Break("live", true, "")
	if err != nil || b.Reason != NotStale {
		t.Fatalf("forced: %+v %v", b, err)
	}
	if err := l.Release(); !errors.Is(err, locks.ErrLost) {
		t.Errorf("release after break: %v, want ErrLost (the lock is no longer ours)", err)
	}
}

func TestBreakWithoutLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	r := newTestLocker(t, dir, time.Minute)
	if _, err := r.Break("none", false, ""); !errors.Is(err, ErrNoLock) {
		t.Fatalf("missing dir: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("break created the directory: %v", err)
	}
}

func TestBreakUnreadableNeedsForce(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	if err := syscall.Mkfifo(r.LockPath("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Break("fifo", false, ""); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("unforced break of a FIFO: %v", err)
	}
	b, err := r.Break("fifo", true, "")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(b.MovedTo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("moved to %s: %v %v", b.MovedTo, fi, err)
	}
}

// TestAwaitReleaseWakesOnHolderExit holds a lock in a helper process
// (this test binary re-run as a holder) and checks that AwaitRelease
// returns when the holder ends, and not before.
func TestAwaitReleaseWakesOnHolderExit(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	holder := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$")
	holder.Env = append(os.Environ(), "LOCKS_HELPER_HOLD="+dir)
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stdin, _ = os.Open(os.DevNull)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	// The helper waits forever: never leave it behind on a failure.
	t.Cleanup(func() {
		if holder.ProcessState == nil {
			holder.Process.Kill()
			holder.Wait()
		}
	})
	buf := make([]byte, 64)
	n, _ := stdout.Read(buf) // the holder prints its lock_id once it holds the lock
	lockID := strings.TrimSpace(string(buf[:n]))
	if lockID == "" {
		t.Fatal("holder did not report a lock")
	}

	var held *locks.HeldError
	if err := r.AwaitRelease("job", lockID, 100*time.Millisecond); !errors.As(err, &held) {
		t.Fatalf("AwaitRelease with a live holder: %v, want a *HeldError once the wait ran out", err)
	}

	done := make(chan error, 1)
	go func() { done <- r.AwaitRelease("job", lockID, 20*time.Second) }()
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	if err := <-done; err != nil {
		t.Fatalf("AwaitRelease after the holder died: %v", err)
	}
}

// TestHelperHolder is not a test: run by TestAwaitReleaseWakesOnHolderExit,
// it takes the lock, prints its lock_id and waits to be killed.
func TestHelperHolder(t *testing.T) {
	dir := os.Getenv("LOCKS_HELPER_HOLD")
	if dir == "" {
		t.Skip("helper process only")
	}
	r := newTestLocker(t, dir, time.Minute)
	l := mustAcquire(t, r, "job")
	os.Stdout.WriteString(l.LockID() + "\n")
	select {}
}

func TestBreakHolderOnlyMovesThatHoldersLock(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	first := mustAcquire(t, r, "job")
	firstID := first.LockID()
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Break("job", true, firstID); !errors.Is(err, ErrNoLock) {
		t.Fatalf("released holder: %v, want ErrNoLock", err)
	}
	second := mustAcquire(t, r, "job")
	if _, err := r.Break("job", true, firstID); !errors.Is(err, ErrNoLock) {
		t.Fatalf("new holder's lock: %v, want ErrNoLock", err)
	}
	if got := readPayload(t, r.LockPath("job")); got.LockID != second.LockID() {
		t.Fatalf("new holder's lock was touched: %+v", got)
	}
	b, err := r.Break("job", true, second.LockID())
	if err != nil || b.Reason != NotStale || b.Holder.LockID != second.LockID() {
		t.Fatalf("live holder: %+v %v", b, err)
	}
}
