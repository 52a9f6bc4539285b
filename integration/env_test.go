package integration

import (
	"strings"
	"testing"
)

// A withlock nested in another's child tells its own child about its own
// lock: the outer WITHLOCK_* variables are replaced, not shadowing.
func TestNestedRunGetsItsOwnLockEnv(t *testing.T) {
	dir := t.TempDir()
	// env(1) prints the environment as the kernel handed it over (a shell
	// would import it and hide a duplicate; getenv takes the first).
	stdout, stderr, code := runWithlock(t, "run", "--dir", dir, "outer", "--",
		withlockBin, "run", "--dir", dir, "inner", "--", "env")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var runIDs, lockIDs []string
	for _, line := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(line, "WITHLOCK_RUN_ID="):
			runIDs = append(runIDs, line)
		case strings.HasPrefix(line, "WITHLOCK_LOCK_ID="):
			lockIDs = append(lockIDs, line)
		}
	}
	if len(runIDs) != 1 || runIDs[0] != "WITHLOCK_RUN_ID=inner" || len(lockIDs) != 1 {
		t.Fatalf("inner child's environment has %q and %d WITHLOCK_LOCK_ID; want WITHLOCK_RUN_ID=inner once, one lock id", runIDs, len(lockIDs))
	}
}
