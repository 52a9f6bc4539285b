//go:build withlock_crashpoints

package scope

import (
	"os"
	"syscall"
)

// crashPointsEnabled says whether this is the crash-point test build.
const crashPointsEnabled = true

// crashPoint kills this process with SIGKILL when WITHLOCK_CRASH_AT names
// the point: a test-only build for the crash-point rows of the scorecard.
// Points: scope:mid-write.
func crashPoint(name string) {
	if os.Getenv("WITHLOCK_CRASH_AT") == name {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns: KILL is on its way
	}
}
