package filelock

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks"
)

// The release of a lock needs two new descriptors (the guard, a read of
// the lock file). A run reserves them at its start (ReserveDescriptors) and
// hands them back when its release runs out of descriptors, which changed
// nothing and runs again, so a run that used up every descriptor meanwhile
// still releases. Run in a child process: it lowers
// its own limit and exhausts it.
func TestReserveKeepsReleasePossible(t *testing.T) {
	for _, free := range []bool{true, false} {
		name := map[bool]string{true: "reserve freed", false: "control: reserve kept"}[free]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestReserveChild$", "-test.v")
			cmd.Env = append(os.Environ(), "LOCKS_RESERVE_CHILD="+dir, "LOCKS_RESERVE_FREE="+map[bool]string{true: "1", false: "0"}[free])
			out, err := cmd.CombinedOutput()
			released := !strings.Contains(string(out), "release failed")
			if err != nil && free {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if free && !released {
				t.Fatalf("release failed with the reserve freed:\n%s", out)
			}
			if !free && released {
				t.Fatalf("control: the release succeeded with every descriptor in use; the test proves nothing:\n%s", out)
			}
			leftover, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
			if free && len(leftover) != 0 {
				t.Errorf("lock left behind: %v", leftover)
			}
		})
	}
}

func TestReserveChild(t *testing.T) {
	dir := os.Getenv("LOCKS_RESERVE_CHILD")
	if dir == "" {
		t.Skip("runs as the child of TestReserveKeepsReleasePossible")
	}
	lim := unix.Rlimit{Cur: 64, Max: 64}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if err := ReserveDescriptors(); err != nil {
		t.Fatal(err)
	}
	r := newTestLocker(t, dir, time.Minute)
	knobsOf(r).noHold = true
	l := mustAcquire(t, r, "job")
	var held []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		held = append(held, fd)
	}
	t.Logf("%d descriptors taken up", len(held))
	err := l.Release()
	if os.Getenv("LOCKS_RESERVE_FREE") == "1" {
		// What withlock does (releaseBounded): a release out of
		// descriptors changed nothing; the reserve goes, and it runs again.
		if !errors.Is(err, syscall.EMFILE) {
			t.Fatalf("first release: %v, want EMFILE (the test exhausts nothing)", err)
		}
		if _, serr := os.Stat(l.Path); serr != nil {
			t.Fatalf("a release out of descriptors changed the lock file: %v", serr)
		}
		t.Logf("first release: %v; reserve freed", err)
		FreeReserve()
		err = l.Release()
	}
	if err != nil {
		t.Logf("release failed: %v", err)
		if !errors.Is(err, syscall.EMFILE) {
			t.Errorf("release error %v, want EMFILE", err)
		}
	}
	for _, fd := range held {
		unix.Close(fd)
	}
}

// emfileFS fails the opens a run needs with EMFILE, or the creation of the
// fence file with ENOSPC, as a process out of descriptors or a full
// filesystem would.
type emfileFS struct {
	osFS
	guard, counter, read error
}

func (f *emfileFS) OpenGuard(p string) (*os.File, error) {
	if f.guard != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: f.guard}
	}
	return f.osFS.OpenGuard(p)
}

func (f *emfileFS) OpenCounter(p string) (*os.File, error) {
	if f.counter != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: f.counter}
	}
	return f.osFS.OpenCounter(p)
}

func (f *emfileFS) ReadLockFile(p string, limit int64) ([]byte, fs.FileInfo, error) {
	if f.read != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: p, Err: f.read}
	}
	return f.osFS.ReadLockFile(p, limit)
}

// Scarce resources before the command: a bounded 73-class error naming the
// path and the OS error, nothing half-written left behind.
func TestScarceResourcesBeforeTheCommand(t *testing.T) {
	cases := []struct {
		name  string
		fs    emfileFS
		errno syscall.Errno
	}{
		{"no descriptor for the guard", emfileFS{guard: syscall.EMFILE}, syscall.EMFILE},
		{"no descriptor for the fence", emfileFS{counter: syscall.EMFILE}, syscall.EMFILE},
		{"no descriptor to read the lock", emfileFS{read: syscall.EMFILE}, syscall.EMFILE},
		{"no space for the fence", emfileFS{counter: syscall.ENOSPC}, syscall.ENOSPC},
		{"system file table full", emfileFS{guard: syscall.ENFILE}, syscall.ENFILE},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestLocker(t, dir, time.Minute)
			f := c.fs
			r.FS = &f
			start := time.Now()
			_, err := r.Acquire(t.Context(), "job", -1)
			if !errors.Is(err, locks.ErrUnavailable) || !errors.Is(err, c.errno) {
				t.Fatalf("err = %v, want ErrUnavailable with %v", err, c.errno)
			}
			if !strings.Contains(err.Error(), dir) {
				t.Errorf("%q does not name the path", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("gave up after %v", d)
			}
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if n := e.Name(); strings.HasSuffix(n, ".lock") || strings.Contains(n, ".tmp.") {
					t.Errorf("left behind: %s", n)
				}
			}
		})
	}
}

// A release that cannot open the guard for want of descriptors changes
// nothing — the lock file stays, the hold and the tree file stay held — so
// that the caller can free descriptors and release again, which then works
// like any release. (Were the hold and the tree let go on the failed
// attempt, the next holder would be woken, and the tree seen ended, while
// the lock file still names this holder.)
func TestReleaseOutOfDescriptorsChangesNothing(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			dir := t.TempDir()
			r := newTestLocker(t, dir, time.Minute)
			f := &emfileFS{}
			r.FS = f
			l := mustAcquire(t, r, "job")
			tree := treePath(l.Path, l.LockID())
			if readPayload(t, l.Path).Hold != true || probeTree(tree) != TreeRunning {
				t.Fatal("the lock was taken without its hold or its tree file")
			}
			f.guard = errno
			if err := l.Release(); !errors.Is(err, errno) {
				t.Fatalf("release with no descriptor for the guard: %v, want %v", err, errno)
			}
			if _, err := os.Stat(l.Path); err != nil {
				t.Fatalf("the failed release touched the lock file: %v", err)
			}
			if holdFree(t, r, "job") {
				t.Fatal("the failed release let the hold go: the next waiter is woken while the lock is held")
			}
			if s := probeTree(tree); s != TreeRunning {
				t.Fatalf("the failed release let the tree file go (%v)", s)
			}
			f.guard = nil
			if err := l.Release(); err != nil {
				t.Fatalf("release once descriptors are back: %v", err)
			}
			if _, err := os.Stat(l.Path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("lock file after the release: %v", err)
			}
			if !holdFree(t, r, "job") {
				t.Fatal("the hold is still held after the release")
			}
			if _, err := os.Stat(l.files.spare); err != nil {
				t.Fatalf("no spare tree file after the release: %v", err)
			}
		})
	}
}
