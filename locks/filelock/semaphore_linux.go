package filelock

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// requestQueue asks for a place in the line of runID's semaphore waiters:
// an exclusive flock of <key>.semq, which the kernel grants to one waiter
// at a time. nil when the file cannot be opened: the waiter then watches
// the slots itself, as if first in line.
func (r *RunLocker) requestQueue(runID string) *holdRequest {
	f, err := r.fsys().OpenGuard(r.files(runID).semq)
	if err != nil {
		return nil
	}
	h, _ := queueExclusive(f)
	return h
}

// markWaiting counts this process among runID's slot waiters until the
// returned func is called: a shared flock of <key>.waiting, which status
// counts in /proc/locks (WaitersOf). Nothing when the file cannot be had.
func (r *RunLocker) markWaiting(runID string) func() {
	f, err := r.fsys().OpenGuard(r.files(runID).waiting)
	if err != nil {
		return func() {}
	}
	if flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}

// WaitersOf counts the processes waiting for a slot of runID: the flocks
// on its <key>.waiting file, as /proc/locks lists them. ok is false when
// that cannot be known.
func (r *RunLocker) WaitersOf(runID string) (n int, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(r.files(runID).waiting, &st); err != nil {
		return 0, os.IsNotExist(err)
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, false
	}
	// "1: FLOCK  ADVISORY  READ  1234 08:01:5678 0 EOF"; blocked requests
	// have "->" after the number, so their second field is not FLOCK. The
	// id is MAJOR:MINOR:INODE, major and minor in hex.
	id := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 6 && fields[1] == "FLOCK" && fields[5] == id {
			n++
		}
	}
	return n, true
}
