package integration

// Scorecard row "waiting CPU": a withlock waiting for a lock it cannot get
// must sleep, not spin. The figure is the CPU time the scheduler charged to
// every thread of the waiting process (/proc/<pid>/task/*/schedstat, exact
// nanoseconds), sampled while it waits; the part spent waiting is that
// minus what the first half second (start-up, first attempts) cost.
//
// Not rusage: on this kind of VM it is charged by timer ticks, so a process
// that wakes briefly a few times a second is billed whole ticks at random
// (an idle Go program "uses" 3 ms a second that way).

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/schedstat"
)

func TestScorecardWaitingCPU(t *testing.T) {
	wait := time.Duration(scaled(3, 10)) * time.Second
	// target: ≤ 0.05 CPU-s per 10 s of waiting, scaled to the wait
	bound := time.Duration(float64(50*time.Millisecond) * wait.Seconds() / 10)
	work := t.TempDir()
	dir := filepath.Join(work, "locks")
	const runID = "busy"
	env := testEnv(t)
	// A build without -race: a -race binary's sanitizer thread wakes on its
	// own, which is the race detector's cost, not withlock's.
	bin := taggedBinary(t, "")

	holder := startProc(binary(t), env, "run", "--dir", dir, runID, "--", "sh", "-c", `: >"$1"; exec sleep 60`, "sh", filepath.Join(work, "held"))
	t.Cleanup(func() { stopProc(holder) })
	if !waitForFile(filepath.Join(work, "held"), 10*time.Second, holder.ended) {
		o, _ := holder.wait(time.Second)
		t.Fatalf("holder never started: exit %d\nstderr: %s", o.code, o.stderr)
	}

	waiter := startProc(bin, env, "run", "--dir", dir, "--wait", (wait + time.Second).String(), runID, "--", "true")
	t.Cleanup(func() { stopProc(waiter) })
	pid := waiter.cmd.Process.Pid
	time.Sleep(500 * time.Millisecond) // the measurement starts after start-up; nothing waits on it
	first, ok := schedstat.CPU(pid)
	if !ok {
		o, _ := waiter.wait(time.Second)
		t.Fatalf("waiter ended before waiting: exit %d\nstderr: %s", o.code, o.stderr)
	}
	start := time.Now()
	time.Sleep(wait)
	last, ok := schedstat.CPU(pid)
	measured := time.Since(start)
	if !ok {
		o, _ := waiter.wait(time.Second)
		t.Fatalf("waiter ended during its wait: exit %d\nstderr: %s", o.code, o.stderr)
	}
	if o, _ := waiter.wait(defaultDeadline); o.code != 75 {
		t.Fatalf("waiter: exit %d, want 75 after its wait\nstderr: %s", o.code, o.stderr)
	}
	waiting := last - first
	if waiting > bound {
		t.Errorf("waiting %v cost %v CPU, want ≤ %v (0.05 s per 10 s)", measured.Round(time.Millisecond), waiting, bound)
	}
	t.Logf("waiting CPU: %v of waiting cost %v (%.4f CPU-s per 10 s); start-up and first attempts %v",
		measured.Round(time.Millisecond), waiting, waiting.Seconds()*10/measured.Seconds(), first)
}
