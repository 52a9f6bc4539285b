package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// treeStress is the outcome of runTreeStress.
type treeStress struct {
	acquisitions, kills int64
	overlaps            []string // what the critical sections recorded
	failures            []string // runs that ended otherwise than expected
}

// runTreeStress runs workers × rounds `withlock run --wait` of one run id
// with bin. Each command enters a critical section (mkdir of a shared
// directory: it fails while another section is inside) and hands it to a
// descendant that leaves it after a moment: a grandchild in the group, a
// setsid'd one, or a setuid one (setpriv), in turn. Every killEvery-th run
// on average, once its descendant has started, withlock itself is
// SIGKILLed: the descendant runs on and must still hold the lock. Any
// section entered while another is inside is an overlap.
func runTreeStress(t *testing.T, bin string, workers, rounds, killEvery int) treeStress {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	shared, err := os.MkdirTemp("", "withlock-tree-stress-") // not 0700: the setuid descendants write here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	cs, ov := filepath.Join(shared, "cs"), filepath.Join(shared, "overlaps")
	if err := os.WriteFile(ov, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ov, 0o666); err != nil {
		t.Fatal(err)
	}
	launchers := []string{"", "setsid ", "setpriv --reuid=65534 --regid=65534 --clear-groups "}
	section := `mkdir "$CS" 2>/dev/null || echo "entered while held: $$" >> "$OV"; %ssh -c 'echo $$ > "$STARTED"; sleep 0.2; rmdir "$CS" 2>/dev/null || echo "left by another: $$" >> "$OV"' & wait`

	var st treeStress
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		st.failures = append(st.failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				started := filepath.Join(shared, fmt.Sprintf("started-%d-%d", w, i))
				script := fmt.Sprintf(section, launchers[(w+i)%len(launchers)])
				env := append(testEnv(t), "CS="+cs, "OV="+ov, "STARTED="+started)
				p := startProc(bin, env, "run", "--wait", "300s", "--dir", dir, "job", "--", "sh", "-c", script)
				kill := rand.IntN(killEvery) == 0
				if kill && waitForFile(started, 5*time.Minute, p.ended) {
					if p.cmd.Process.Signal(syscall.SIGKILL) == nil {
						atomic.AddInt64(&st.kills, 1)
					}
				}
				o, err := p.wait(6 * time.Minute)
				switch {
				case err != nil:
					fail("worker %d round %d: %v", w, i, err)
				case o.code == 0:
					atomic.AddInt64(&st.acquisitions, 1)
				case o.code == 128+int(syscall.SIGKILL) && kill:
					atomic.AddInt64(&st.acquisitions, 1)
				default:
					fail("worker %d round %d: exit %d: %s", w, i, o.code, o.stderr)
				}
			}
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(ov)
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.TrimSpace(string(data)); text != "" {
		st.overlaps = strings.Split(text, "\n")
	}
	// The last descendants leave on their own; wait for them so that the
	// leftover check sees none.
	pollUntil(defaultDeadline, func() bool { _, err := os.Stat(cs); return err != nil })
	return st
}

// TestScorecardTreeStressKilledHolders: holders SIGKILLed while their
// grandchildren, setsid'd and setuid descendants run never let a second
// holder in (make stress: 8 × 200).
func TestScorecardTreeStressKilledHolders(t *testing.T) {
	workers, rounds := 8, scaled(3, 200)
	start := time.Now()
	st := runTreeStress(t, binary(t), workers, rounds, 3)
	t.Logf("%d workers × %d rounds: %d acquisitions, %d holders SIGKILLed, %d overlaps, %v",
		workers, rounds, st.acquisitions, st.kills, len(st.overlaps), time.Since(start).Round(time.Second))
	for _, f := range st.failures {
		t.Error(f)
	}
	if len(st.overlaps) != 0 {
		t.Errorf("%d overlaps: %q", len(st.overlaps), st.overlaps)
	}
	if st.acquisitions != int64(workers*rounds) {
		t.Errorf("%d acquisitions, want %d", st.acquisitions, workers*rounds)
	}
}

// TestScorecardTreeStressKilledHoldersNegativeControl: with the tree file
// gone (failpoint no-tree) the same load shows overlaps.
func TestScorecardTreeStressKilledHoldersNegativeControl(t *testing.T) {
	st := runTreeStress(t, taggedBinary(t, tagNoTree), 4, 4, 2)
	t.Logf("negative control: %d acquisitions, %d holders SIGKILLed, %d overlaps", st.acquisitions, st.kills, len(st.overlaps))
	if st.kills == 0 {
		t.Fatal("negative control: no holder was killed; the scenario did not run")
	}
	if len(st.overlaps) == 0 {
		t.Fatal("negative control: no overlap without the tree file; the row could not fail")
	}
}
