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

// Three scopes nested: each child sees its own allocation's name, so the
// innermost delegates from the middle one, not from the outermost.
func TestNestedScopeGetsItsOwnName(t *testing.T) {
	reg := t.TempDir() + "/scope.lock"
	base := t.TempDir()
	stdout, stderr, code := runWithlock(t, "scope", "--scope-file", reg, "--name", "outer", "--allow", base+":write:recursive", "--",
		withlockBin, "scope", "--scope-file", reg, "--name", "middle", "--allow", base+"/a:write:recursive", "--", "env")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	var names []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "WITHLOCK_SCOPE_NAME=") {
			names = append(names, line)
		}
	}
	if len(names) != 1 || names[0] != "WITHLOCK_SCOPE_NAME=middle" {
		t.Fatalf("middle's child sees %q, want WITHLOCK_SCOPE_NAME=middle once", names)
	}
}
