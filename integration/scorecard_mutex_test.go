package integration

// Scorecard rows "mutual exclusion" and "… with crashes": many processes
// take one run lock over and over; inside the critical section the child
// claims an occupancy marker with mkdir (EEXIST = two holders at once) and
// bumps a counter with an unlocked read-modify-write (a lost update = two
// holders at once).

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// criticalSection is the child of every holder. $1 marker dir, $2 counter,
// $3 overlap log, $4 dir of victims' tokens, $5 start log. A holder marked
// as a victim ($VICTIM set) declares its token a victim's, says it is
// ready (writing its token into the ready file), and waits to be killed with its withlock: its marker stays behind,
// and the next holder may clear a marker only if it belongs to a victim.
const criticalSection = `
t=$WITHLOCK_FENCING_TOKEN
if ! mkdir "$1" 2>/dev/null; then
	prev=$(cat "$1/token" 2>/dev/null)
	if [ -n "$prev" ] && [ -e "$4/$prev" ]; then
		rm -rf "$1"; mkdir "$1" || echo "token $t: marker reappeared after clearing victim $prev" >>"$3"
	else
		echo "token $t: marker held by token '$prev'" >>"$3"
	fi
fi
echo "$t" >"$1/token"
echo "$t $(date +%s%N)" >>"$5"
n=$(cat "$2" 2>/dev/null || echo 0)
echo $((n + 1)) >"$2"
if [ -n "$VICTIM" ]; then
	: >"$4/$t"
	echo "$t" >"$VICTIM.tmp" && mv "$VICTIM.tmp" "$VICTIM"
	exec sleep 60
fi
rm -f "$1/token"
rmdir "$1" 2>/dev/null || echo "token $t: marker gone or refilled at exit" >>"$3"
exit 0
`

// exclusionLoad describes one run of the load.
type exclusionLoad struct {
	workers, perWorker int
	killP              float64 // probability that a holder is SIGKILLed in its critical section
	ttl                time.Duration
	// ownRunIDs gives each worker its own run id: no exclusion at all,
	// for the check that the detector sees overlaps when there are some.
	ownRunIDs bool
}

// exclusionResult is what the load observed.
type exclusionResult struct {
	overlaps  []string
	counter   int
	kills     map[int]time.Time // victim's fencing token -> when its withlock was killed
	starts    map[int]time.Time // fencing token -> when its critical section began
	dupTokens []int             // fencing tokens seen in more than one critical section
	errs      []error
	wall      time.Duration
}

func TestScorecardMutualExclusion(t *testing.T) {
	load := exclusionLoad{workers: 8, perWorker: scaled(20, 500), ttl: 30 * time.Second}
	res := runExclusionLoad(t, load)
	total := load.workers * load.perWorker
	checkExclusion(t, res, total)
	t.Logf("mutual exclusion: %d workers × %d acquisitions = %d critical sections in %v, %d overlaps, counter %d",
		load.workers, load.perWorker, total, res.wall.Round(time.Millisecond), len(res.overlaps), res.counter)
}

// TestScorecardMutualExclusionWithCrashes: holders SIGKILLed inside their
// critical section (p ≈ 0.1). The TTL is long (30 s) on purpose: a reclaim
// that waited for expiry would show as a gap of ~30 s; a reclaim by pid
// liveness (pidfd wake-up) shows as a gap of milliseconds. The bound of 5 s
// separates the two mechanisms; it is not a speed claim.
func TestScorecardMutualExclusionWithCrashes(t *testing.T) {
	load := exclusionLoad{workers: 8, perWorker: scaled(12, 500), killP: 0.1, ttl: 30 * time.Second}
	res := runExclusionLoad(t, load)
	total := load.workers * load.perWorker
	checkExclusion(t, res, total)
	if len(res.kills) == 0 {
		t.Fatal("no holder was killed: the row did not test crashes")
	}
	gaps := reclaimGaps(t, res)
	const bound = 5 * time.Second
	for tok, g := range gaps {
		if g >= bound {
			t.Errorf("victim token %d: next holder started %v after the kill, want < %v (TTL %v): reclaim waited for expiry?", tok, g, bound, load.ttl)
		}
	}
	t.Logf("with crashes: %d critical sections, %d holders killed, %d overlaps, counter %d, kill→next holder gap %s, wall %v",
		total, len(res.kills), len(res.overlaps), res.counter, describeDurations(slices.Collect(maps.Values(gaps))), res.wall.Round(time.Millisecond))
}

// TestScorecardMutualExclusionDetectorSeesOverlaps: the same load with one
// run id per worker (so no mutual exclusion) must show overlaps or lost
// updates — proof that the two rows above can fail.
func TestScorecardMutualExclusionDetectorSeesOverlaps(t *testing.T) {
	load := exclusionLoad{workers: 8, perWorker: 10, ttl: 30 * time.Second, ownRunIDs: true}
	res := runExclusionLoad(t, load)
	for _, err := range res.errs {
		t.Error(err)
	}
	total := load.workers * load.perWorker
	if len(res.overlaps) == 0 && res.counter == total {
		t.Errorf("8 unlocked workers: no overlap and counter %d = %d: the detector cannot see overlaps", res.counter, total)
	}
	t.Logf("without a shared lock: %d overlaps seen, counter %d of %d", len(res.overlaps), res.counter, total)
}

func checkExclusion(t *testing.T, res exclusionResult, total int) {
	t.Helper()
	for _, err := range res.errs {
		t.Error(err)
	}
	if len(res.overlaps) > 0 {
		t.Errorf("%d overlaps:\n%s", len(res.overlaps), strings.Join(res.overlaps, "\n"))
	}
	if res.counter != total {
		t.Errorf("counter = %d, want %d (lost updates mean two holders at once)", res.counter, total)
	}
	if len(res.dupTokens) > 0 {
		t.Errorf("fencing tokens handed out more than once: %v", res.dupTokens)
	}
	if len(res.starts) != total {
		t.Errorf("%d distinct fencing tokens among %d critical sections, want one each", len(res.starts), total)
	}
}

func runExclusionLoad(t *testing.T, load exclusionLoad) exclusionResult {
	t.Helper()
	work := t.TempDir()
	dir := filepath.Join(work, "locks")
	marker, counter, overlapLog := filepath.Join(work, "marker"), filepath.Join(work, "counter"), filepath.Join(work, "overlaps")
	victims, startLog := filepath.Join(work, "victims"), filepath.Join(work, "starts")
	if err := os.Mkdir(victims, 0o700); err != nil {
		t.Fatal(err)
	}
	env, bin := testEnv(t), binary(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("victim choice seed %d", seed)

	var (
		mu  sync.Mutex
		res = exclusionResult{kills: map[int]time.Time{}}
		wg  sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < load.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for i := 0; i < load.perWorker; i++ {
				victim := rng.Float64() < load.killP
				runID := "shared-run"
				if load.ownRunIDs {
					runID = fmt.Sprintf("worker-%d", w)
				}
				args := []string{"run", "--dir", dir, "--wait", "60s", "--ttl", load.ttl.String(), runID, "--",
					"sh", "-c", criticalSection, "sh", marker, counter, overlapLog, victims, startLog}
				var err error
				var token int
				var killedAt time.Time
				if victim {
					ready := filepath.Join(work, fmt.Sprintf("ready-%d-%d", w, i))
					token, killedAt, err = runVictim(bin, append(slices.Clip(env), "VICTIM="+ready), ready, args)
				} else {
					var o outcome
					o, err = execWithlock(bin, env, 90*time.Second, args...)
					if err == nil && o.code != 0 {
						err = fmt.Errorf("worker %d run %d: exit %d, want 0\nstderr: %s", w, i, o.code, o.stderr)
					}
				}
				mu.Lock()
				if err != nil {
					res.errs = append(res.errs, err)
				} else if victim {
					res.kills[token] = killedAt
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	res.overlaps = readLines(overlapLog)
	if data, err := os.ReadFile(counter); err == nil {
		res.counter, _ = strconv.Atoi(strings.TrimSpace(string(data)))
	}
	res.starts, res.dupTokens = readStarts(t, startLog)
	return res
}

// runVictim runs one holder that is SIGKILLed (withlock itself, not the
// child) once its child is inside the critical section. It returns the
// victim's fencing token and when the kill was sent.
func runVictim(bin string, env []string, ready string, args []string) (int, time.Time, error) {
	cmd := newCmd(bin, env, args)
	if err := cmd.Start(); err != nil {
		return 0, time.Time{}, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	ended := func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
	if !waitForFile(ready, 90*time.Second, ended) {
		_ = cmd.Process.Kill()
		<-done
		return 0, time.Time{}, fmt.Errorf("victim %s ended (or timed out) before its critical section", cmd)
	}
	killedAt := time.Now()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
	data, err := os.ReadFile(ready)
	if err != nil {
		return 0, killedAt, err
	}
	token, err := strconv.Atoi(strings.TrimSpace(string(data)))
	return token, killedAt, err
}

// reclaimGaps: for each killed holder, how long after the kill the next
// holder's critical section began. The next holder is the one with the next
// fencing token (tokens grow by one per acquisition).
func reclaimGaps(t *testing.T, res exclusionResult) map[int]time.Duration {
	t.Helper()
	gaps := map[int]time.Duration{}
	for tok, killedAt := range res.kills {
		next, ok := res.starts[tok+1]
		if !ok {
			continue // the last holder of the load
		}
		gaps[tok] = next.Sub(killedAt)
	}
	return gaps
}

func readStarts(t *testing.T, path string) (starts map[int]time.Time, dups []int) {
	t.Helper()
	starts = map[int]time.Time{}
	for _, line := range readLines(path) {
		var tok int
		var ns int64
		if _, err := fmt.Sscan(line, &tok, &ns); err != nil {
			t.Errorf("start log line %q: %v", line, err)
			continue
		}
		if _, dup := starts[tok]; dup {
			dups = append(dups, tok)
		}
		starts[tok] = time.Unix(0, ns)
	}
	return starts, dups
}

func readLines(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// describeDurations summarises a sample: n, median, min–max, max.
func describeDurations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("n=%d median %v (min %v, max %v)", len(ds), r(ds[len(ds)/2]), r(ds[0]), r(ds[len(ds)-1]))
}
