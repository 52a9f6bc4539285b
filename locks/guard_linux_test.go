package locks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// A contended guard is granted once its holder lets go, not after a poll.
func TestGuardGrantedOnRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.guard")
	holder := holdGuard(t, path)
	released := make(chan time.Time, 1)
	go func() {
		// A pause so that lockGuard usually finds the guard held and takes
		// the blocking path; the assertions hold either way.
		time.Sleep(50 * time.Millisecond)
		released <- time.Now()
		holder.Close()
	}()
	g, err := lockGuard(OSFS{}, path, 10*time.Second)
	if err != nil {
		t.Fatalf("lockGuard: %v", err)
	}
	defer unlockGuard(g)
	at := <-released
	if !time.Now().After(at) {
		t.Fatal("guard granted before its holder released it")
	}
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

// A holder that never lets go (a stopped withlock) ends the wait at the
// bound with ErrGuardBusy, and the abandoned wait gives the guard back as
// soon as it gets it, so the next transition is not blocked forever.
func TestGuardBoundedAndAbandonedWaitReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.guard")
	holder := holdGuard(t, path)
	_, err := lockGuard(OSFS{}, path, 100*time.Millisecond)
	if !errors.Is(err, ErrGuardBusy) {
		t.Fatalf("lockGuard on a guard held throughout: %v, want ErrGuardBusy", err)
	}
	holder.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := lockGuard(OSFS{}, path, 100*time.Millisecond)
		if err == nil {
			unlockGuard(g)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("guard still busy 10s after its holder let go: %v", err)
		}
	}
}
