//go:build withlock_crashpoints

package testbuild

import (
	"os"
	"syscall"
)

func init() {
	crashAt, hangAt := os.Getenv("WITHLOCK_CRASH_AT"), os.Getenv("WITHLOCK_HANG_AT")
	if crashAt == "" && hangAt == "" {
		return
	}
	CrashAt = func(point string) {
		switch point {
		case crashAt:
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns: KILL is on its way
		case hangAt:
			select {} // as a system call on a hung filesystem would
		}
	}
}
