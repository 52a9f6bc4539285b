package filelock

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waker blocks a waiting acquirer until something may have changed: the
// lock file removed, renamed or replaced (inotify on the directory), the
// holder's process ended (pidfd), the context ended, or a timeout. Each
// source is optional; without any of them Wait is a plain sleep.
//
// The descriptors are non-blocking and read through Go's netpoller (epoll),
// never with a blocking poll(2) from a goroutine: a thread blocked in a
// system call keeps the runtime's sysmon thread waking to watch it, where
// the netpoller lets the whole process sleep until an event or the timer
// (a waiter may wait for hours; it should cost next to nothing).
type waker struct {
	ctx   context.Context
	dir   string
	names map[string]bool // the lock files (base names) whose events matter

	ino   *os.File // inotify instance; nil when unavailable
	inoFd int      // its descriptor, for adding and removing the watch
	wd    int      // its watch on dir; -1 when not watching
	wdMu  sync.Mutex
	dirty chan struct{} // one token: an event concerned the lock or the dir

	pid      int           // the holder watched through pidfd
	pidFile  *os.File      // its pidfd
	pidEnded chan struct{} // closed when that process ends
}

// dirEvents are the changes that can free the lock: its file removed or
// renamed away, the directory itself gone. A file renamed onto the lock
// path (IN_MOVED_TO) is its holder renewing — it frees nothing, and the
// waiter rechecks at the expiry it last read anyway.
const dirEvents = unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// newWaker watches the lock files names of dir (base names; several for
// the slots of a semaphore): a change to any of them wakes Wait.
func newWaker(ctx context.Context, dir string, names ...string) *waker {
	w := &waker{ctx: ctx, dir: dir, wd: -1, dirty: make(chan struct{}, 1), names: make(map[string]bool, len(names))}
	for _, n := range names {
		w.names[n] = true
	}
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err == nil {
		w.ino, w.inoFd = os.NewFile(uintptr(fd), "inotify"), fd
		w.Watching()
		go w.readEvents(w.ino)
	}
	return w
}

// Watching reports whether directory events will wake Wait, adding the
// watch again if the directory was recreated.
func (w *waker) Watching() bool {
	if w.ino == nil {
		return false
	}
	w.wdMu.Lock()
	defer w.wdMu.Unlock()
	if w.wd < 0 {
		if wd, err := unix.InotifyAddWatch(w.inoFd, w.dir, dirEvents); err == nil {
			w.wd = wd
		}
	}
	return w.wd >= 0
}

// Wait returns after at most timeout, earlier on an event. pid, when
// non-zero, is a holder on this host whose exit should wake us; granted,
// when not nil, closes when the hold is granted to us.
func (w *waker) Wait(timeout time.Duration, pid int, granted <-chan struct{}) {
	w.watchPid(pid)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.ctx.Done():
	case <-granted:
	case <-w.dirty:
	case <-w.pidEnded: // nil (never ready) without a pidfd or once fired
		w.pidEnded = nil
	}
}

// readEvents turns inotify events about our lock file or the directory
// itself into a token on dirty, until the instance is closed.
func (w *waker) readEvents(f *os.File) {
	var buf [4096]byte
	for {
		n, err := f.Read(buf[:])
		if err != nil {
			return // closed by Close
		}
		if w.relevant(buf[:n]) {
			select {
			case w.dirty <- struct{}{}:
			default:
			}
		}
	}
}

// relevant reports whether a batch of events concerns our lock file or the
// directory itself (deleted or moved: the watch is gone, a retry recreates
// the directory and Watching adds the watch again).
func (w *waker) relevant(buf []byte) bool {
	found := false
	for off := 0; off+unix.SizeofInotifyEvent <= len(buf); {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
		end := off + unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			break
		}
		name := bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00")
		off = end
		if ev.Mask&unix.IN_IGNORED != 0 {
			w.wdMu.Lock()
			w.wd = -1
			w.wdMu.Unlock()
		}
		if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 || w.names[string(name)] {
			found = true
		}
	}
	return found
}

// watchPid arranges for pidEnded to close when pid ends. A pidfd turns
// readable when its process exits; RawConn.Read waits for that through the
// netpoller. Each look asks the pidfd itself (poll with no timeout) rather
// than trusting that the first look is too early: Read first clears any
// readiness the netpoller has recorded, and a holder that exited before
// the goroutine got there (a zombie's pidfd is readable from the start)
// has no second event to send; the wait would last until the safety poll.
func (w *waker) watchPid(pid int) {
	if pid == w.pid {
		return
	}
	w.closePid()
	w.pid = pid
	if pid <= 0 {
		return
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		// Gone, and reaped, since the attempt that found it alive: as good
		// as its pidfd turning readable (without this, the wait would last
		// until the safety poll).
		ended := make(chan struct{})
		close(ended)
		w.pidEnded = ended
		return
	}
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	ended := make(chan struct{})
	w.pidFile, w.pidEnded = f, ended
	go func() {
		if err := conn.Read(pidfdReadable); err == nil {
			close(ended)
		}
	}()
}

// pidfdReadable reports whether the process of a pidfd has ended.
func pidfdReadable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
	}
}

func (w *waker) closePid() {
	if w.pidFile != nil {
		w.pidFile.Close()
	}
	w.pidFile, w.pidEnded, w.pid = nil, nil, 0
}

// Close releases the waker without waiting on the kernel. Closing an
// inotify instance that still has a watch waits until the kernel has
// retired the watch (an SRCU grace period, tens of milliseconds), and a
// process that exits with such an instance open waits the same in its
// exit, where the caller of withlock sees it. The watch removed first,
// the retirement runs in the kernel's background and a close a few
// milliseconds later is instant. So the watch is removed now, off the
// caller's path, and the instance closed after closeDelay; a process that
// exits sooner closes it in its exit, as fast once the retirement is done.
func (w *waker) Close() {
	w.closePid()
	if w.ino == nil {
		return
	}
	w.wdMu.Lock()
	wd := w.wd
	w.wd = -1
	w.wdMu.Unlock()
	ino, fd, delay := w.ino, w.inoFd, closeDelay
	go func() {
		if wd >= 0 {
			// ino is open until the AfterFunc below: fd is still its.
			_, _ = unix.InotifyRmWatch(fd, uint32(wd))
		}
		time.AfterFunc(delay, func() { ino.Close() })
	}()
}

// closeDelay is how long after removing its watch Close closes an inotify
// instance: comfortably past the grace period, so the close does not wait.
var closeDelay = 100 * time.Millisecond
