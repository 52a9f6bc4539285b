package locks

import (
	"bytes"
	"context"
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waker blocks a waiting acquirer until something may have changed: the
// lock file removed, renamed or replaced (inotify on the directory), the
// holder's process ended (pidfd), the context ended (a pipe written by
// context.AfterFunc), or a timeout. Each source is optional; without any of
// them Wait is a plain sleep. Nothing here spins.
type waker struct {
	dir, name string
	ino, wd   int
	pipeR     int
	pipeW     int
	stop      func() bool
	pidfd     int
	pidfdPid  int
	pidFired  bool // the holder's pidfd fired: poll it no more (it stays readable)
}

const dirEvents = unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

func newWaker(ctx context.Context, dir, name string) *waker {
	w := &waker{dir: dir, name: name, ino: -1, wd: -1, pipeR: -1, pipeW: -1, pidfd: -1}
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err == nil {
		w.ino = fd
		w.Watching()
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err == nil {
		w.pipeR, w.pipeW = p[0], p[1]
		w.stop = context.AfterFunc(ctx, func() { unix.Write(w.pipeW, []byte{0}) })
	}
	return w
}

// Watching reports whether directory events will wake Wait, adding the
// watch again if the directory was recreated.
func (w *waker) Watching() bool {
	if w.ino < 0 {
		return false
	}
	if w.wd < 0 {
		wd, err := unix.InotifyAddWatch(w.ino, w.dir, dirEvents)
		if err != nil {
			return false
		}
		w.wd = wd
	}
	return true
}

// Wait returns after at most timeout, earlier on an event. pid, when
// non-zero, is a holder on this host whose exit should wake us.
func (w *waker) Wait(timeout time.Duration, pid int) {
	w.watchPid(pid)
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		fds := make([]unix.PollFd, 0, 3)
		pidfd := w.pidfd
		if w.pidFired {
			pidfd = -1
		}
		for _, fd := range []int{w.ino, w.pipeR, pidfd} {
			if fd >= 0 {
				fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			}
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			if err != nil {
				time.Sleep(left) // poll itself failed: still never spin
			}
			return
		}
		for _, p := range fds {
			if p.Revents == 0 {
				continue
			}
			if int(p.Fd) == w.pidfd {
				w.pidFired = true
			}
			if int(p.Fd) != w.ino || w.drainEvents() {
				return
			}
		}
	}
}

// drainEvents reads the queued inotify events and reports whether any
// concerns our lock file or the directory itself.
func (w *waker) drainEvents() bool {
	var buf [4096]byte
	relevant := false
	for {
		n, err := unix.Read(w.ino, buf[:])
		if n <= 0 || err != nil {
			return relevant
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				if ev.Mask&unix.IN_IGNORED != 0 {
					w.wd = -1
				}
				relevant = true
				continue
			}
			if string(bytes.TrimRight(nameBytes, "\x00")) == w.name {
				relevant = true
			}
		}
	}
}

func (w *waker) watchPid(pid int) {
	if pid == w.pidfdPid && w.pidfd >= 0 {
		return
	}
	if w.pidfd >= 0 {
		unix.Close(w.pidfd)
		w.pidfd, w.pidfdPid, w.pidFired = -1, 0, false
	}
	if pid <= 0 {
		return
	}
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		w.pidfd, w.pidfdPid = fd, pid
	}
}

// Close releases the waker. Closing an inotify instance waits for an RCU
// grace period in the kernel (10–20 ms measured here), which would sit
// between getting the lock and starting the child; it is closed in the
// background instead.
func (w *waker) Close() {
	if w.stop != nil {
		w.stop()
	}
	for _, fd := range []int{w.pipeR, w.pipeW, w.pidfd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	if w.ino >= 0 {
		go unix.Close(w.ino)
	}
}
