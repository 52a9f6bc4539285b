package supervisor

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// terminal is withlock's controlling terminal, held in the foreground when
// the child was spawned; the child's group gets it and restore takes it back.
type terminal struct {
	fd   int
	pgrp int // withlock's own process group
}

// foregroundTerminal returns the terminal on f when f is withlock's
// controlling terminal and withlock's group is its foreground group, else
// nil. TIOCGPGRP fails with ENOTTY on a terminal that is not ours.
func foregroundTerminal(f *os.File) *terminal {
	fd := int(f.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != unix.Getpgrp() {
		return nil
	}
	return &terminal{fd: fd, pgrp: fg}
}

// restore makes withlock's group the foreground group again. withlock is a
// background group at that point, so tcsetpgrp would raise SIGTTOU and stop
// us; the signal is blocked on this thread for the call (a blocked SIGTTOU
// counts as ignored for the tty check). The goroutine is locked to its
// thread for the call, so the mask is changed and restored on the thread
// that makes it.
func (t *terminal) restore() error {
	if t == nil {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var block, old unix.Sigset_t
	sigaddset(&block, unix.SIGTTOU)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		return fmt.Errorf("block SIGTTOU: %w", err)
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	if err := unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, t.pgrp); err != nil {
		return fmt.Errorf("take the terminal back: %w", err)
	}
	return nil
}

// sigaddset adds sig to set (unix.Sigset_t is a bit array of 64-bit words).
func sigaddset(set *unix.Sigset_t, sig unix.Signal) {
	n := uint(sig) - 1
	set.Val[n/64] |= 1 << (n % 64)
}
