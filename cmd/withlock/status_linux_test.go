package main

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStatusRunIDNeverListsTheDir (issue 18): `status RUN_ID` reads the
// named run ids' files by their derived names and never lists the lock
// directory, so a directory of 10,000 locks costs it nothing more than an
// empty one. The kernel says when a directory is listed: inotify reports
// IN_ACCESS on the directory itself for every getdents, whatever the mount
// options (atime would not: relatime or noatime hide it). The directory
// holds an exclusive lock, a moved-aside lock, a scope registry and a
// semaphore's slots, so every path of status RUN_ID is taken: slots,
// semaphore summary, tree file, leftovers. Negative control: status without
// RUN_IDs, which must list the directory, is seen doing so.
func TestStatusRunIDNeverListsTheDir(t *testing.T) {
	r, scopeFile, release := statusFixture(t)
	defer release()
	slot, err := r.AcquireSlot(context.Background(), "b", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Release()

	listings := func(named []string) int {
		t.Helper()
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if _, err := unix.InotifyAddWatch(fd, r.Dir, unix.IN_ACCESS); err != nil {
			t.Fatal(err)
		}
		st := gatherStatus(r, named, scopeFile)
		if len(st.Errors) != 0 || len(st.Locks) == 0 {
			t.Fatalf("status %q: locks %+v, errors %v", named, st.Locks, st.Errors)
		}
		return dirAccessEvents(t, fd)
	}
	if n := listings(nil); n == 0 {
		t.Fatal("status without RUN_IDs listed the lock dir and inotify saw no IN_ACCESS on it: this check cannot fail")
	}
	for _, named := range [][]string{{"job"}, {"b"}, {"job", "old", "b", "no-such-run"}} {
		if n := listings(named); n != 0 {
			t.Errorf("status %q read the lock dir %s (%d IN_ACCESS on the dir itself): it must open the named files only", named, r.Dir, n)
		}
	}
}

// dirAccessEvents drains the inotify descriptor and counts the events on
// the watched directory itself (no name: not one of its entries).
func dirAccessEvents(t *testing.T, fd int) int {
	t.Helper()
	n := 0
	buf := make([]byte, 64<<10)
	for {
		got, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= got; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflow")
			}
			if ev.Len == 0 && ev.Mask&unix.IN_ACCESS != 0 {
				n++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
