//go:build unix

package sigsub

import (
	"os"
	"syscall"
)

var (
	forwarded = []os.Signal{
		syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT,
	}
	childExited = []os.Signal{syscall.SIGCHLD}
)
