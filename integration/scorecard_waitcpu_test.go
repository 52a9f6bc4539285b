package integration

// Scorecard row "waiting CPU": a withlock waiting for a lock it cannot get
// must sleep, not spin. The figure is the CPU time (user + system, from the
// rusage wait4 returns) of the whole waiting process, start-up included;
// the part spent waiting is that minus the CPU of the same command with no
// wait (start-up, one attempt, the conflict line).

import (
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func TestScorecardWaitingCPU(t *testing.T) {
	wait := time.Duration(scaled(3, 10)) * time.Second
	// target: ≤ 0.05 CPU-s per 10 s of waiting, scaled to the wait
	waitingBound := time.Duration(float64(50*time.Millisecond) * wait.Seconds() / 10)
	work := t.TempDir()
	dir := filepath.Join(work, "locks")
	const runID = "busy"
	env := testEnv(t)

	holder := startProc(binary(t), env, "run", "--dir", dir, runID, "--", "sh", "-c", `: >"$1"; exec sleep 60`, "sh", filepath.Join(work, "held"))
	t.Cleanup(func() { stopProc(holder) })
	if !waitForFile(filepath.Join(work, "held"), 10*time.Second, holder.ended) {
		o, _ := holder.wait(time.Second)
		t.Fatalf("holder never started: exit %d\nstderr: %s", o.code, o.stderr)
	}

	// baseline: the same command, giving up at once (median of 5)
	var base []time.Duration
	for i := 0; i < 5; i++ {
		o, err := execWithlock(binary(t), env, defaultDeadline, "run", "--dir", dir, runID, "--", "true")
		if err != nil || o.code != 75 {
			t.Fatalf("baseline conflict: exit %d, err %v, want 75", o.code, err)
		}
		base = append(base, o.cpu)
	}
	sort.Slice(base, func(i, j int) bool { return base[i] < base[j] })
	baseline := base[len(base)/2]

	o, err := execWithlock(binary(t), env, wait+defaultDeadline, "run", "--dir", dir, "--wait", wait.String(), runID, "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	if o.code != 75 {
		t.Fatalf("waiter: exit %d, want 75 after waiting %v\nstderr: %s", o.code, wait, o.stderr)
	}
	if o.elapsed < wait {
		t.Fatalf("waiter gave up after %v, before its --wait %v", o.elapsed, wait)
	}
	waiting := max(o.cpu-baseline, 0)
	if waiting > waitingBound {
		t.Errorf("waiting %v cost %v CPU beyond start-up (total %v, start-up and one attempt %v), want ≤ %v (0.05 s per 10 s)",
			wait, waiting, o.cpu, baseline, waitingBound)
	}
	if o.cpu > 50*time.Millisecond {
		t.Errorf("the waiting process used %v CPU in all (start-up included), want ≤ 50ms", o.cpu)
	}
	t.Logf("waiting CPU: %v of waiting cost %v in all; start-up + one attempt %v; so %v for the wait itself (%.4f CPU-s per 10 s)",
		wait, o.cpu, baseline, waiting, waiting.Seconds()*10/wait.Seconds())
}
