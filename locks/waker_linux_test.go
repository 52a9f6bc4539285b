package locks

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
