package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/testwait"
)

// holdGuard takes the guard the way another withlock would: its own open
// file description, so its flock conflicts with ours.
func holdGuard(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return f
}

// A contended guard is waited for in the kernel (a blocked flock, seen in
// /proc/locks) and granted once its holder lets go, not after a poll.
func TestGuardGrantedOnRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.guard")
	holder := holdGuard(t, path)
	type result struct {
		g   *os.File
		err error
	}
	got := make(chan result, 1)
	go func() {
		g, err := lockGuard(osFS{}, path, time.Minute)
		got <- result{g, err}
	}()
	testwait.For(t, 10*time.Second, "lockGuard blocked in flock on the guard", func() bool {
		return blockedFlocks(t, path) == 1
	})
	select {
	case r := <-got:
		t.Fatalf("lockGuard returned (%v) while the guard was held", r.err)
	default:
	}
	holder.Close()
	r := testwait.Recv(t, got, 10*time.Second, "the guard to be granted after its holder let go")
	if r.err != nil {
		t.Fatalf("lockGuard: %v", r.err)
	}
	g := r.g
	defer unlockGuard(g)
	// Ours now: a third party is refused.
	other, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX|unix.LOCK_NB); !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("third party's flock while we hold the guard: %v, want EWOULDBLOCK", err)
	}
}

// awaitQueuedFlock returns once the kernel has queued a flock waiter on
// path: the blocking path of lockGuard is then certainly taken.
func awaitQueuedFlock(t *testing.T, path string) {
	t.Helper()
	testwait.For(t, 10*time.Second, "a flock queued on "+path, func() bool { return blockedFlocks(t, path) > 0 })
}

// blockedFlocks counts the flock waiters the kernel has queued on path's
// inode: the "->" lines of /proc/locks.
func blockedFlocks(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	suffix := ":" + strconv.FormatUint(inodeOf(t, path), 10)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 6 && f[1] == "->" && f[2] == "FLOCK" && strings.HasSuffix(f[6], suffix) {
			n++
		}
	}
	return n
}

// A holder that never lets go (a stopped withlock) ends the wait at the
// bound with ErrGuardBusy, and the abandoned wait gives the guard back as
// soon as it gets it, so the next transition is not blocked forever.
func TestGuardBoundedAndAbandonedWaitReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.guard")
	holder := holdGuard(t, path)
	_, err := lockGuard(osFS{}, path, 100*time.Millisecond)
	if !errors.Is(err, ErrGuardBusy) {
		t.Fatalf("lockGuard on a guard held throughout: %v, want ErrGuardBusy", err)
	}
	holder.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := lockGuard(osFS{}, path, 100*time.Millisecond)
		if err == nil {
			unlockGuard(g)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("guard still busy 10s after its holder let go: %v", err)
		}
	}
}
