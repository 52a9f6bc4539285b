package filelock

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
)

// A holder already gone and reaped when its pidfd is asked for wakes the
// waiter at once, as its pidfd would have (not at the safety poll).
func TestWaitForReapedHolderReturnsAtOnce(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	w := newWaker(context.Background(), t.TempDir(), "x.lock")
	defer w.Close()
	start := time.Now()
	w.Wait(time.Minute, cmd.Process.Pid, nil)
	if d := time.Since(start); d > eventWake {
		t.Fatalf("Wait on a reaped holder took %v, want at once", d)
	}
}

// A holder that has already exited, but is not reaped yet (a zombie),
// has a pidfd that is readable from the start. Its one readiness event
// can come before the goroutine waiting on the pidfd starts, and a wait
// that is told "not yet" on its first look would then sleep until the
// safety poll: the waiter must wake at once. Run many times, since the
// order of the two is up to the scheduler.
func TestWaitForExitedUnreapedHolderReturnsAtOnce(t *testing.T) {
	for i := range 20 {
		cmd := exec.Command("true")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		testwait.For(t, 10*time.Second, "the child to exit", func() bool { return isZombie(pid) })
		w := newWaker(context.Background(), t.TempDir(), "x.lock")
		start := time.Now()
		w.Wait(3*eventWake, pid, nil)
		d := time.Since(start)
		w.Close()
		cmd.Wait()
		if d > eventWake {
			t.Fatalf("round %d: Wait on an exited, unreaped holder took %v, want at once", i, d)
		}
	}
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Close removes the directory watch at once and closes the inotify
// instance only after closeDelay: closing an instance that still has a
// watch waits out a kernel grace period, which a process would otherwise
// pay in its exit.
func TestWakerCloseRemovesWatchThenCloses(t *testing.T) {
	defer func(d time.Duration) { closeDelay = d }(closeDelay)
	closeDelay = 200 * time.Millisecond

	w := newWaker(context.Background(), t.TempDir(), "x.lock")
	if !w.Watching() {
		t.Fatal("no watch on the directory")
	}
	var fd int
	conn, err := w.ino.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	conn.Control(func(f uintptr) { fd = int(f) })
	info := fmt.Sprintf("/proc/self/fdinfo/%d", fd)
	watches := func() int {
		data, err := os.ReadFile(info)
		if err != nil {
			return -1 // closed
		}
		return strings.Count(string(data), "inotify wd:")
	}
	if n := watches(); n != 1 {
		t.Fatalf("%s lists %d watches before Close, want 1", info, n)
	}

	w.Close()
	testwait.For(t, 5*time.Second, "the watch removed", func() bool { return watches() == 0 })
	if link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); link != "anon_inode:inotify" {
		t.Fatalf("fd %d is %q right after the watch went, want the instance still open", fd, link)
	}
	testwait.For(t, 5*time.Second, "the instance closed", func() bool {
		link, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		return link != "anon_inode:inotify"
	})
}
