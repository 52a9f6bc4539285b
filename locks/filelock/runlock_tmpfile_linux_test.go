package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// noUnnamed is a filesystem without O_TMPFILE.
type noUnnamed struct{ osFS }

func (noUnnamed) OpenUnnamed(string, fs.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// Where O_TMPFILE is missing, the named temp file is used, and removed.
func TestAcquireWithoutUnnamedTempFiles(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	r.FS = noUnnamed{}
	l := mustAcquire(t, r, "job")
	if p := readPayload(t, l.Path); p.LockID != l.LockID() {
		t.Fatalf("lock file carries %q, want %q", p.LockID, l.LockID())
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp.*")); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// An acquisition removes nothing from the directory, so a waiter watching
// it for removals (IN_DELETE, IN_MOVED_FROM) is woken by releases only.
// With a named temp file every acquisition would wake every waiter once
// for the temp file's removal: the negative control shows that it does.
func TestAcquireRemovesNothingWaitersWatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fs    FS
		quiet bool
	}{
		{"unnamed temp", osFS{}, true},
		{"named temp (negative control)", noUnnamed{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := newTestLocker(t, dir, time.Minute)
			r.FS = tc.fs
			if f, err := r.fsys().OpenUnnamed(dir, 0o600); errors.Is(err, errors.ErrUnsupported) && tc.quiet {
				t.Skip("no O_TMPFILE on this filesystem")
			} else if err == nil {
				f.Close()
			}
			ino, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(ino)
			if _, err := unix.InotifyAddWatch(ino, dir, unix.IN_DELETE|unix.IN_MOVED_FROM); err != nil {
				t.Fatal(err)
			}
			l := mustAcquire(t, r, "job")
			removed := drainInotify(t, ino)
			if tc.quiet && len(removed) > 0 {
				t.Fatalf("acquiring removed %v from the watched directory", removed)
			}
			if !tc.quiet && len(removed) == 0 {
				t.Fatal("negative control: the named temp file's removal was not seen")
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			// The tree file goes too; waiters watch for the lock file's
			// name only (waker.relevant), so it wakes none of them.
			tree := filepath.Base(treePath(l.Path, l.LockID()))
			if removed := drainInotify(t, ino); !slices.Equal(removed, []string{filepath.Base(l.Path), tree}) {
				t.Fatalf("release removed %v, want the lock file and then %s", removed, tree)
			}
			w := &waker{names: map[string]bool{filepath.Base(l.Path): true}}
			if w.relevant(inotifyEvent(tree)) {
				t.Fatal("the tree file's removal would wake a waiter")
			}
		})
	}
}

// drainInotify returns the names in the events queued on ino.
func drainInotify(t *testing.T, ino int) []string {
	t.Helper()
	var names []string
	var buf [4096]byte
	for {
		n, err := unix.Read(ino, buf[:])
		if err == unix.EAGAIN {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			names = append(names, fmt.Sprintf("%s", name))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// inotifyEvent is one IN_DELETE event for name, as the kernel lays it out.
func inotifyEvent(name string) []byte {
	n := (len(name) + 1 + 15) / 16 * 16
	buf := make([]byte, unix.SizeofInotifyEvent+n)
	ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
	ev.Mask, ev.Len = unix.IN_DELETE, uint32(n)
	copy(buf[unix.SizeofInotifyEvent:], name)
	return buf
}
