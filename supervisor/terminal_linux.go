package supervisor

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/internal/proc"
)

// terminal is withlock's controlling terminal, found on one of the
// descriptors the child gets as stdin, stdout and stderr. When withlock
// leads its group and that group is in the foreground, the child's group
// gets it; withlock takes it back when the child ends or the job stops.
type terminal struct {
	fd   int
	pgrp int // withlock's own process group
}

// controllingTerminal returns the terminal on the first of files that is
// withlock's controlling terminal, else nil. TIOCGPGRP fails with ENOTTY on
// a terminal that is not ours (and on anything that is not a terminal).
func controllingTerminal(files ...*os.File) *terminal {
	for _, f := range files {
		fd := int(f.Fd())
		if _, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil {
			return &terminal{fd: fd, pgrp: unix.Getpgrp()}
		}
	}
	return nil
}

// sharesCallersGroup reports whether the command stays in withlock's
// process group, its caller's: withlock has a controlling terminal but does
// not lead its group, so its caller is no job-control shell (a script run
// as `bash script.sh`, make, `sh -c` from a program, a pipeline's later
// stage). A job-control shell makes every job a group of its own, led by
// its first process. In that group the terminal's Ctrl-C, Ctrl-\ and Ctrl-Z
// reach the caller and the command as if the caller ran the command itself.
func sharesCallersGroup(tty *terminal) bool {
	return tty != nil && tty.pgrp != os.Getpid() && !failpoint.On(failpoint.OwnGroup)
}

// Orphaned reports whether withlock is on its controlling terminal (on
// stdin, stdout or stderr) in an orphaned process group: none of the
// group's members has a parent in another group of the same session, so
// no job-control shell can continue it. Its caller then leads the session
// and is no shell (tmux's `new-window 'bash deploy.sh'`, `ssh -t host
// ./deploy.sh`, Python's pty.spawn), and the kernel discards a TSTP, TTIN
// or TTOU that would stop such a group's members. Off a terminal, and
// where /proc cannot be read, it reports false: a TSTP sent there stops
// withlock as before.
func Orphaned() bool {
	all, err := proc.All()
	if err != nil || controllingTerminal(os.Stdin, os.Stdout, os.Stderr) == nil {
		return false
	}
	pgrp := unix.Getpgrp()
	sid, _ := unix.Getsid(0)
	groupOf := make(map[int]int, len(all))
	for _, p := range all {
		groupOf[p.Pid] = p.Pgrp
	}
	for _, p := range all {
		// A parent outside withlock's pid namespace (PPid 0) is in no
		// group seen here: it counts as in another session.
		if g, seen := groupOf[p.PPid]; p.Pgrp == pgrp && seen && g != pgrp {
			if s, err := unix.Getsid(p.PPid); err == nil && s == sid {
				return false
			}
		}
	}
	return true
}

// foreground returns the terminal's foreground process group, 0 when it
// cannot be read (no group has id 0).
func (t *terminal) foreground() int {
	pgrp, _ := unix.IoctlGetInt(t.fd, unix.TIOCGPGRP)
	return pgrp
}

// ours reports whether withlock's group is the terminal's foreground group.
func (t *terminal) ours() bool { return t.foreground() == t.pgrp }

// setForeground makes pgrp the terminal's foreground group. When withlock
// is a background group at that point, tcsetpgrp would raise SIGTTOU and
// stop us; the signal is blocked on this thread for the call (a blocked
// SIGTTOU counts as ignored for the tty check). The goroutine is locked to
// its thread for the call, so the mask is changed and restored on the
// thread that makes it.
func (t *terminal) setForeground(pgrp int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var block, old unix.Sigset_t
	sigaddset(&block, unix.SIGTTOU)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		return fmt.Errorf("block SIGTTOU: %w", err)
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	if err := unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, pgrp); err != nil {
		return fmt.Errorf("give the terminal to process group %d: %w", pgrp, err)
	}
	return nil
}

// sigaddset adds sig to set (unix.Sigset_t is a bit array of 64-bit words).
func sigaddset(set *unix.Sigset_t, sig unix.Signal) {
	n := uint(sig) - 1
	set.Val[n/64] |= 1 << (n % 64)
}
