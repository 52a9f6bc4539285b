package integration

// Scorecard rows "teardown" and "start-up race", and the teardown row's
// negative control (failpoint no-subreaper).

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stubbornTree is a child that ignores TERM (so do its descendants: an
// ignored disposition survives fork and exec), with a grandchild, a
// setsid'd grandchild and a double-forked orphan in its own session (which
// reparents to withlock, the subreaper). Each writes its pid into $1/pids;
// $1/ready appears once all four are up.
const stubbornTree = `
trap '' TERM
d=$1
sh -c 'echo $$ >>"$1/pids"; exec sleep 60' sh "$d" &
setsid sh -c 'echo $$ >>"$1/pids"; exec sleep 60' sh "$d" &
(setsid sh -c 'echo $$ >>"$1/pids"; exec sleep 60' sh "$d" &)
echo $$ >>"$d/pids"
while [ "$(wc -l <"$d/pids")" -lt 4 ]; do sleep 0.01; done
: >"$d/ready"
wait
`

// teardownOutcome is what one teardown run observed.
type teardownOutcome struct {
	code      int
	exitAfter time.Duration // from TERM to withlock's exit
	survivors []string      // recorded processes still present (alive or zombie)
}

func TestScorecardTeardown(t *testing.T) {
	const grace = time.Second
	o := runTeardown(t, binary(t), grace)
	if len(o.survivors) > 0 {
		t.Errorf("after withlock exited, %d of the child's processes remain: %v", len(o.survivors), o.survivors)
	}
	if o.code != 128+9 {
		t.Errorf("exit %d, want 137 (the TERM-ignoring child KILLed after the grace)", o.code)
	}
	// The bound is grace + 1 s; 500 ms more absorbs scheduling noise of a
	// loaded 2-core CI machine under -race. The real figure is logged.
	if limit := grace + time.Second + 500*time.Millisecond; o.exitAfter > limit {
		t.Errorf("withlock exited %v after TERM, want ≤ grace (%v) + 1 s (+0.5 s slack)", o.exitAfter, grace)
	}
	t.Logf("teardown: TERM-ignoring child + grandchild + setsid'd grandchild + double-forked orphan, --grace %v: exit %d after %v, %d survivors",
		grace, o.code, o.exitAfter.Round(time.Millisecond), len(o.survivors))
}

// TestScorecardNegativeControlNoSubreaper: with the subreaper and the
// leftover cleanup disabled, the teardown row must fail: the setsid'd
// processes (outside the child's group) survive withlock.
func TestScorecardNegativeControlNoSubreaper(t *testing.T) {
	o := runTeardown(t, taggedBinary(t, tagNoSubreaper), time.Second)
	if len(o.survivors) == 0 {
		t.Fatalf("build without subreaper: no process survived (exit %d after %v): the teardown row cannot tell", o.code, o.exitAfter)
	}
	t.Logf("without subreaper: %d processes survived withlock — the teardown row fails as it should: %v", len(o.survivors), o.survivors)
}

// TestScorecardTeardownDetectorSeesSurvivors: with --keep-orphans (daemons
// the child left behind may live on, by request) the setsid'd processes
// survive, and the teardown row's check must see them — proof it can fail
// while the no-subreaper control is pending.
func TestScorecardTeardownDetectorSeesSurvivors(t *testing.T) {
	o := runTeardown(t, binary(t), time.Second, "--keep-orphans")
	if len(o.survivors) == 0 {
		t.Fatalf("--keep-orphans: no survivor seen (exit %d): the teardown check cannot see leftovers", o.code)
	}
	t.Logf("--keep-orphans: exit %d after %v, %d survivors seen: %v", o.code, o.exitAfter.Round(time.Millisecond), len(o.survivors), o.survivors)
}

func runTeardown(t *testing.T, bin string, grace time.Duration, extraArgs ...string) teardownOutcome {
	t.Helper()
	work := t.TempDir()
	args := append([]string{"run", "--dir", filepath.Join(work, "locks"), "--grace", grace.String()}, extraArgs...)
	args = append(args, "teardown", "--", "sh", "-c", stubbornTree, "sh", work)
	p := startProc(bin, testEnv(t), args...)
	t.Cleanup(func() { stopProc(p) })
	if !waitForFile(filepath.Join(work, "ready"), 10*time.Second, p.ended) {
		o, _ := p.wait(time.Second)
		t.Fatalf("tree never came up: exit %d\nstderr: %s", o.code, o.stderr)
	}
	tree := recordPids(t, filepath.Join(work, "pids"))
	termAt := time.Now()
	signalProc(t, p, syscall.SIGTERM)
	<-p.done
	exitAfter := time.Since(termAt)
	o, err := p.wait(0)
	if err != nil {
		t.Fatal(err)
	}
	assertNoPanic(t, "teardown", o.stderr)
	out := teardownOutcome{code: o.code, exitAfter: exitAfter, survivors: tree.remaining()}
	for _, r := range tree {
		_ = syscall.Kill(r.pid, syscall.SIGKILL) // survivors of a broken build must not outlive the test
	}
	return out
}

// recordedProc is a pid with its start time, so a later check is not fooled
// by pid reuse.
type recordedProc struct {
	pid   int
	start string
}

type recordedTree []recordedProc

// recordPids reads the pids a child wrote to path (one a line).
func recordPids(t *testing.T, path string) recordedTree {
	t.Helper()
	var tree recordedTree
	for _, line := range readLines(path) {
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("%s: %q is not a pid", path, line)
		}
		tree = append(tree, recordedProc{pid: pid, start: procStartTime(pid)})
	}
	return tree
}

// remaining lists the recorded processes that still exist, alive or as
// zombies (a zombie nobody reaps is a leftover too).
func (tree recordedTree) remaining() []string {
	var left []string
	for _, r := range tree {
		if r.start == "" || procStartTime(r.pid) != r.start {
			continue
		}
		p, _ := readProc(r.pid)
		left = append(left, fmt.Sprintf("pid %d state %c ppid %d (%s)", r.pid, p.state, p.ppid, p.cmdline))
	}
	return left
}

// procStartTime is field 22 of /proc/<pid>/stat, "" when there is no such process.
func procStartTime(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}

// TestScorecardStartupRace: TERM at a random moment 0–50 ms after start —
// before withlock installed its handlers, while it takes the lock, while it
// spawns, or after. Every run must end with the lock free, no process of
// its tree left (alive or zombie), and status 143.
func TestScorecardStartupRace(t *testing.T) {
	runs := scaled(25, 200)
	work := t.TempDir()
	dir := filepath.Join(work, "locks")
	env := testEnv(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("delay seed %d", seed)
	childStarted := 0
	for i := 0; i < runs; i++ {
		runDir := filepath.Join(work, strconv.Itoa(i))
		if err := os.Mkdir(runDir, 0o700); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		// the child records itself and a grandchild, then waits
		p := startProc(binary(t), env, "run", "--dir", dir, "--grace", "2s", "startup", "--",
			"sh", "-c", `sleep 60 & echo $! >>"$1/pids"; echo $$ >>"$1/pids"; wait`, "sh", runDir)
		time.Sleep(delay) // the random moment is the point of the row
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		o, err := p.wait(15 * time.Second)
		if err != nil {
			t.Fatalf("run %d (TERM after %v): %v", i, delay, err)
		}
		tree := recordPids(t, filepath.Join(runDir, "pids"))
		if len(tree) > 0 {
			childStarted++
		}
		if o.code != 128+15 {
			t.Errorf("run %d (TERM after %v): exit %d, want 143\nstderr: %s", i, delay, o.code, o.stderr)
		}
		assertNoPanic(t, fmt.Sprintf("run %d", i), o.stderr)
		if left := tree.remaining(); len(left) > 0 {
			t.Errorf("run %d (TERM after %v): left behind %v", i, delay, left)
		}
		if z := zombieChildren(os.Getpid()); len(z) > 0 {
			t.Errorf("run %d: zombies: %v", i, z)
		}
		if left := markedProcesses(markOf(t)); len(left) > 0 {
			t.Errorf("run %d (TERM after %v): still running: %v", i, delay, left)
		}
		assertFreeNow(t, dir, "startup", fmt.Sprintf("run %d (TERM after %v)", i, delay))
		if t.Failed() {
			return
		}
	}
	t.Logf("start-up race: %d/%d runs clean (the child had started in %d of them)", runs, runs, childStarted)
}
