package filelock

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Lock ids are 128 bits in hex and do not repeat: a lock id that repeated
// would let one holder release another's lock.
func TestRandomIDDoesNotRepeat(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := randomID()
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("lock id %q: want 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("lock id %s repeated within 1000 draws", id)
		}
		seen[id] = true
	}
}

// Two processes must not draw the same lock ids: the generator is seeded
// per process, which a re-exec of the test binary shows.
func TestRandomIDDiffersBetweenProcesses(t *testing.T) {
	a, b := randomIDInChild(t), randomIDInChild(t)
	if a == b || len(a) != 32 {
		t.Fatalf("two processes drew %q and %q", a, b)
	}
	if a == randomID() {
		t.Fatalf("the child's id equals ours")
	}
}

// randomIDInChild runs this test binary as a helper that prints the first
// lock id a fresh process draws.
func randomIDInChild(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRandomID$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKS_HELPER_RANDOM_ID=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return first
}

func TestHelperRandomID(t *testing.T) {
	if os.Getenv("LOCKS_HELPER_RANDOM_ID") == "" {
		t.Skip("helper process only")
	}
	os.Stdout.WriteString(randomID() + "\n")
}
