package locks

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Every length is filled to the end, and no two draws repeat: a lock id that
// repeated would let one holder release another's lock.
func TestRandomBytesFillsAndDoesNotRepeat(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 33} {
		seen := map[string]bool{}
		for range 1000 {
			b := make([]byte, n+1)
			b[n] = 0xAA // a guard byte past the slice handed over
			randomBytes(b[:n])
			if b[n] != 0xAA {
				t.Fatalf("n=%d: wrote past the slice", n)
			}
			if n >= 8 {
				if seen[string(b[:n])] {
					t.Fatalf("n=%d: a value repeated within 1000 draws", n)
				}
				seen[string(b[:n])] = true
			}
		}
	}
	// The tail of a non-multiple-of-8 length is random too, not left zero.
	zeroTail := 0
	for range 200 {
		b := make([]byte, 9)
		randomBytes(b)
		if b[8] == 0 {
			zeroTail++
		}
	}
	if zeroTail > 20 {
		t.Fatalf("the 9th byte was zero in %d of 200 draws", zeroTail)
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
