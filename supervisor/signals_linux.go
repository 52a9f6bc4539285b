package supervisor

import (
	"os"
	"syscall"
)

// AbortsWait reports whether sig, received while waiting for the lock, ends
// the wait (status 128+N, or death by INT and QUIT): true for every caught
// signal whose default action ends a process. CONT and WINCH are ignored
// while waiting; TSTP, TTIN and TTOU stop withlock (see StopsJob).
func AbortsWait(sig os.Signal) bool {
	switch sig {
	case syscall.SIGCONT, syscall.SIGWINCH, syscall.SIGCHLD, syscall.SIGURG:
		return false
	}
	return !StopsJob(sig)
}

// StopsJob reports whether sig is a job-control stop (TSTP, TTIN, TTOU):
// while waiting for the lock withlock stops itself (StopSelf), while the
// child runs it stops the child's tree and then itself.
func StopsJob(sig os.Signal) bool {
	return sig == syscall.SIGTSTP || sig == syscall.SIGTTIN || sig == syscall.SIGTTOU
}

// startsTeardown reports whether sig, received while the child runs, also
// starts teardown (forward, wait the grace, KILL) rather than being only
// forwarded.
func startsTeardown(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGINT
}

// raise sends sig to this process again (Signals.HandOver).
func raise(sig os.Signal) {
	if n, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(os.Getpid(), n)
	}
}
