//go:build withlock_crashpoints

package testbuild

import (
	"os"
	"syscall"
)

func init() {
	at := os.Getenv("WITHLOCK_CRASH_AT")
	if at == "" {
		return
	}
	CrashAt = func(point string) {
		if point == at {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns: KILL is on its way
		}
	}
}
