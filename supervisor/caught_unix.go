//go:build unix && !linux

package supervisor

import (
	"os"
	"syscall"
)

// Only Linux supervises (Run is unsupported elsewhere); the wait still
// answers the common signals.
var (
	caught = []os.Signal{
		syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGCONT, syscall.SIGTSTP,
		syscall.SIGTTIN, syscall.SIGTTOU,
	}
	childChanged = []os.Signal{syscall.SIGCHLD}
)
