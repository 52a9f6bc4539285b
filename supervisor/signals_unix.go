//go:build unix

package supervisor

import (
	"os"
	"syscall"
)

// AbortsWait reports whether sig, received while waiting for the lock, ends
// the wait: true for the signals whose default action terminates.
func AbortsWait(sig os.Signal) bool {
	switch sig {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGUSR1, syscall.SIGUSR2:
		return true
	}
	return false
}

// startsTeardown reports whether sig, received while the child runs, also
// starts teardown (forward, wait the grace, KILL) rather than being only
// forwarded.
func startsTeardown(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGINT
}
