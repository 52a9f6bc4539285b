package integration

import (
	"fmt"
	"github.com/withlock/withlock/internal/failpoint"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// semStress is the outcome of runSemStress.
type semStress struct {
	acquisitions, kills, conflicts int64
	violations                     []string // what the commands recorded
	failures                       []string // runs that ended otherwise than expected
	slots                          map[string]int
	peak                           int // most completed sections seen at once (from their start/end times)
	readerPeak                     int // most shared sections at once (mixed row)
	exclusives                     int // exclusive sections entered (mixed row)
	wall                           time.Duration
}

// The commands prove exclusion with the kernel's flocks, which withlock does
// not use for these files: a --max command takes `flock -n` on a seat file
// named by its WITHLOCK_SLOT and refuses a slot outside 0…max−1, so two
// holders of one slot, or a slot that does not exist, are recorded — and
// with every holder on a distinct seat among max, never more than max run
// at once. A shared command takes `flock -s -n` on one file, an exclusive
// one `flock -x -n`: an exclusive holder with anyone else is recorded. The
// descriptor is inherited by the command's descendants like withlock's tree
// file, so a holder SIGKILLed while a grandchild runs keeps its seat until
// the grandchild ends, exactly as long as withlock must keep the slot.
const (
	semSection = `D=$0; touch "$D/started.$PPID"
exec 8>"$D/seat.$WITHLOCK_SLOT"
if [ "$WITHLOCK_SLOT" -ge "$MAX" ] || ! flock -n 8; then echo "slot $WITHLOCK_SLOT taken twice or out of range (pid $$)" >> "$D/violations"; fi
echo "$WITHLOCK_SLOT" >> "$D/slots"
echo "S $(date +%s%N)" >> "$D/times.$PPID"
sh -c 'sleep 0.0$(($$ % 5 + 1))' & wait
echo "E $(date +%s%N)" >> "$D/times.$PPID"`
	rwSection = `D=$0; touch "$D/started.$PPID"
exec 8>"$D/rw"
if ! flock -n "$HOW" 8; then echo "$WHO with someone else there (pid $$)" >> "$D/violations"; fi
echo "S $(date +%s%N)" >> "$D/times.$WHO.$PPID"
sh -c 'sleep 0.0$(($$ % 5 + 1))' & wait
echo "E $(date +%s%N)" >> "$D/times.$WHO.$PPID"`
)

// runSemStress runs workers × rounds acquisitions of run id "sem" with bin.
// max > 0: every run is `--max max`. max == 0: a mixed row, each run
// shared or, one time in four, exclusive (a plain run). Every killEvery-th
// run on average withlock is SIGKILLed once its command has started, while
// the command's grandchild (its sleep) runs on.
func runSemStress(t *testing.T, bin string, workers, rounds, max, killEvery int) semStress {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	work := t.TempDir()
	var st semStress
	var mu sync.Mutex
	fail := func(format string, args ...any) {
		mu.Lock()
		st.failures = append(st.failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	began := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				args := []string{"run", "--wait", "300s", "--dir", dir}
				env := append(testEnv(t), "MAX="+strconv.Itoa(max))
				script := semSection
				if max > 0 {
					args = append(args, "--max", strconv.Itoa(max))
				} else {
					script = rwSection
					if rand.IntN(4) == 0 {
						env = append(env, "HOW=-x", "WHO=exclusive")
					} else {
						args = append(args, "--shared")
						env = append(env, "HOW=-s", "WHO=shared")
					}
				}
				p := startProc(bin, env, append(args, "sem", "--", "sh", "-c", script, work)...)
				if rand.IntN(killEvery) == 0 && p.startErr == nil {
					started := filepath.Join(work, "started."+strconv.Itoa(p.cmd.Process.Pid))
					if waitForFile(started, 5*time.Minute, p.ended) && p.cmd.Process.Signal(syscall.SIGKILL) == nil {
						atomic.AddInt64(&st.kills, 1)
					}
				}
				o, err := p.wait(6 * time.Minute)
				switch {
				case err != nil:
					fail("worker %d round %d: %v", w, i, err)
				case o.code == 0:
					atomic.AddInt64(&st.acquisitions, 1)
				case o.code == 128+int(syscall.SIGKILL):
					// killed by us
				case o.code == 75:
					atomic.AddInt64(&st.conflicts, 1)
				default:
					fail("worker %d round %d: exit %d\n%s", w, i, o.code, o.stderr)
				}
			}
		}()
	}
	wg.Wait()
	st.wall = time.Since(began)
	if data, err := os.ReadFile(filepath.Join(work, "violations")); err == nil {
		st.violations = strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	st.slots = map[string]int{}
	if data, err := os.ReadFile(filepath.Join(work, "slots")); err == nil {
		for _, s := range strings.Fields(string(data)) {
			st.slots[s]++
		}
	}
	st.peak, st.readerPeak = sectionPeaks(t, work)
	ex, _ := filepath.Glob(filepath.Join(work, "times.exclusive.*"))
	st.exclusives = len(ex)
	return st
}

// sectionPeaks reads the start and end times the commands wrote and
// returns the most sections inside at once, overall and shared only. A
// killed command's section has no end and is left out: the peaks are a
// figure to report, the flocks are the proof.
func sectionPeaks(t *testing.T, work string) (all, shared int) {
	t.Helper()
	type edge struct {
		at     int64
		delta  int
		shared bool
	}
	var edges []edge
	files, _ := filepath.Glob(filepath.Join(work, "times.*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(string(data))
		if len(fields) != 4 || fields[0] != "S" || fields[2] != "E" {
			continue // killed inside, or not a section at all
		}
		s, _ := strconv.ParseInt(fields[1], 10, 64)
		e, _ := strconv.ParseInt(fields[3], 10, 64)
		sh := strings.Contains(filepath.Base(f), ".shared.")
		edges = append(edges, edge{s, 1, sh}, edge{e, -1, sh})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // an end before a start at the same instant
	})
	n, ns := 0, 0
	for _, e := range edges {
		n += e.delta
		all = max(all, n)
		if e.shared {
			ns += e.delta
			shared = max(shared, ns)
		}
	}
	return all, shared
}

func (st semStress) report(t *testing.T, what string, workers, rounds int) {
	t.Helper()
	slots := slices.Sorted(maps.Keys(st.slots))
	t.Logf("%s: %d×%d runs in %v: %d completed, %d holders SIGKILLed, %d conflicts (wait ran out), %d violations; slots used %v %v; peak %d at once (shared %d, exclusive sections %d)",
		what, workers, rounds, st.wall.Round(time.Millisecond), st.acquisitions, st.kills, st.conflicts, len(st.violations), slots, st.slots, st.peak, st.readerPeak, st.exclusives)
}

// checkRow fails t on what every semaphore row forbids: a run that ended
// other than completed or killed, an exclusion violation, no kill at all
// (the row did not test crashes), a --wait that ran out.
func (st semStress) checkRow(t *testing.T) {
	t.Helper()
	for _, f := range st.failures {
		t.Error(f)
	}
	if len(st.violations) > 0 {
		t.Errorf("%d exclusion violations, first: %s", len(st.violations), st.violations[0])
	}
	if st.kills == 0 || st.conflicts > 0 {
		t.Errorf("%d kills, %d conflicts: want some kills and no --wait running out", st.kills, st.conflicts)
	}
}

// Scorecard: 8 processes × N acquisitions of `run --max 3` with random
// SIGKILLs of holders whose grandchildren run on: never two holders of a
// slot, never a slot outside 0…2 (so never more than 3 at once), every slot
// used, nothing but completed or killed runs.
func TestScorecardSemaphoreMax3(t *testing.T) {
	workers, rounds := 8, scaled(10, 200)
	st := runSemStress(t, binary(t), workers, rounds, 3, 8)
	st.report(t, "--max 3", workers, rounds)
	st.checkRow(t)
	for _, k := range []string{"0", "1", "2"} {
		if st.slots[k] == 0 {
			t.Errorf("slot %s never used: %v", k, st.slots)
		}
	}
	if len(st.slots) != 3 || st.peak > 3 {
		t.Errorf("slots %v, peak %d: want exactly 0, 1, 2 and at most 3 at once", st.slots, st.peak)
	}
}

// Negative control: with the slots' exclusion taken out (build tag
// failpoint broken-slots) the same row records violations.
func TestScorecardSemaphoreMax3Control(t *testing.T) {
	const tag = failpoint.BrokenSlots
	st := runSemStress(t, taggedBinary(t, tag), 8, 5, 3, 8)
	st.report(t, "--max 3, broken slots", 8, 5)
	if len(st.violations) == 0 {
		t.Fatalf("no violations without the slots' exclusion: the row cannot fail")
	}
}

// Scorecard: 8 processes × N acquisitions, shared (3 in 4) and exclusive
// (plain run) mixed, random SIGKILLs: never an exclusive holder with anyone
// else, shared holders seen together, no wait running out.
func TestScorecardSharedExclusiveMix(t *testing.T) {
	workers, rounds := 8, scaled(10, 200)
	st := runSemStress(t, binary(t), workers, rounds, 0, 8)
	st.report(t, "--shared/exclusive", workers, rounds)
	st.checkRow(t)
	if st.readerPeak < 2 || st.exclusives == 0 {
		t.Errorf("shared holders at once %d, exclusive sections %d: want both kinds, shared together", st.readerPeak, st.exclusives)
	}
}

// Negative control: with an exclusive holder that does not wait for the
// shared ones (build tag failpoint broken-slots), the mix records
// violations.
func TestScorecardSharedExclusiveMixControl(t *testing.T) {
	const tag = failpoint.BrokenSlots
	st := runSemStress(t, taggedBinary(t, tag), 8, 8, 0, 8)
	st.report(t, "--shared/exclusive, broken slots", 8, 8)
	if len(st.violations) == 0 {
		t.Fatalf("no violations without the exclusion: the row cannot fail")
	}
}
