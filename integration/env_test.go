package integration

import (
	"strings"
	"testing"
)

// A withlock nested in another's child tells its own child about its own
// lock: the outer WITHLOCK_* variables are replaced, not shadowing.
func TestNestedRunGetsItsOwnLockEnv(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := runWithlock(t, "run", "--dir", dir, "outer", "--",
		withlockBin, "run", "--dir", dir, "inner", "--", "sh", "-c", `env | grep '^WITHLOCK_RUN_ID=' ; env | grep -c '^WITHLOCK_LOCK_ID='`)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got := strings.Fields(stdout); len(got) != 2 || got[0] != "WITHLOCK_RUN_ID=inner" || got[1] != "1" {
		t.Fatalf("inner child saw %q; want WITHLOCK_RUN_ID=inner once and one WITHLOCK_LOCK_ID", stdout)
	}
}
