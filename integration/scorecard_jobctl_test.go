package integration

// Scorecard rows "job control keeps exclusion" and "resumed after a lost
// lock" (issue 15, SPEC §5): `kill -TSTP` of withlock stops the command's
// whole tree with it, so nothing of it runs while withlock renews nothing
// and a second run may take the expired lock; a withlock continued after its
// lock was broken KILLs the stopped tree before any of it runs again (76).
// Each row has its negative control.

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// tickTree is a command whose tree keeps writing: sh appends to $1 and a
// setsid'd daemon (outside the command's process group) to $2, every 20 ms.
const tickTree = `setsid sh -c 'while :; do echo d >>"$1"; sleep 0.02; done' sh "$2" &
while :; do echo m >>"$1"; sleep 0.02; done`

// ticking is one withlock run over tickTree.
type ticking struct {
	p            *execProc
	main, daemon string // the tick files
	dir, runID   string
}

func startTicking(t *testing.T, dir, runID string, extra ...string) *ticking {
	t.Helper()
	work := t.TempDir()
	tk := &ticking{main: filepath.Join(work, "main.ticks"), daemon: filepath.Join(work, "daemon.ticks"), dir: dir, runID: runID}
	args := append([]string{"run", "--dir", dir, "--grace", "2s"}, extra...)
	args = append(args, runID, "--", "sh", "-c", tickTree, "sh", tk.main, tk.daemon)
	tk.p = startProc(binary(t), testEnv(t), args...)
	t.Cleanup(func() { stopProc(tk.p) })
	tk.waitGrowing(t, "the tree to tick")
	return tk
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func (tk *ticking) sizes() [2]int64 { return [2]int64{fileSize(tk.main), fileSize(tk.daemon)} }

func (tk *ticking) waitGrowing(t *testing.T, what string) {
	t.Helper()
	before := tk.sizes()
	waitFor(t, 10*time.Second, func() bool {
		now := tk.sizes()
		return now[0] > before[0] && now[1] > before[1]
	}, what)
}

// grewOver reports whether a tick file grows within d: an observation
// window (a running tree ticks every 20 ms), not a wait for a condition.
func (tk *ticking) grewOver(d time.Duration) bool {
	before := tk.sizes()
	return pollUntil(d, func() bool { return tk.sizes() != before })
}

// waitStopped waits until withlock itself is stopped (state T).
func (tk *ticking) waitStopped(t *testing.T) {
	t.Helper()
	pid := tk.p.cmd.Process.Pid
	waitFor(t, 10*time.Second, func() bool { p, ok := readProc(pid); return ok && p.state == 'T' }, "withlock to stop")
}

// tstpOutcome is what a stopped holder and a second run of its lock did.
type tstpOutcome struct {
	ranWhileStopped bool // the stopped holder's tree ticked while it was stopped
	second          outcome
	holder          outcome
	ranAfterResume  bool
}

// runStoppedHolder starts a holder with a 1 s TTL, stops it with stop, runs
// a second withlock of the same lock (waiting up to 4 s) to its end, then
// continues the holder and lets it end.
func runStoppedHolder(t *testing.T, stop syscall.Signal) tstpOutcome {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	tk := startTicking(t, dir, "job", "--ttl", "1s")
	signalProc(t, tk.p, stop)
	tk.waitStopped(t)
	var out tstpOutcome
	before := tk.sizes()
	second, err := execWithlock(binary(t), testEnv(t), defaultDeadline,
		"run", "--dir", dir, "--ttl", "1s", "--wait", "4s", "job", "--", "sh", "-c", "sleep 0.3")
	if err != nil {
		t.Fatal(err)
	}
	out.second = second
	out.ranWhileStopped = tk.sizes() != before || tk.grewOver(200*time.Millisecond)
	after := tk.sizes()
	signalProc(t, tk.p, syscall.SIGCONT)
	// Continued, the holder either still owns its lock, and its tree ticks
	// again, or finds it lost (taken or moved aside meanwhile) and must end
	// by itself (76) without its tree running.
	pollUntil(10*time.Second, func() bool { return tk.p.ended() || tk.sizes() != after })
	if !tk.p.ended() {
		signalProc(t, tk.p, syscall.SIGTERM)
	}
	holder, err := tk.p.wait(defaultDeadline)
	if err != nil {
		t.Fatal(err)
	}
	out.holder, out.ranAfterResume = holder, tk.sizes() != after
	return out
}

// TestScorecardJobControlExclusion: kill -TSTP of a holder stops its whole
// tree (group and setsid'd daemon) before withlock stops; a second run of
// the lock (which may take it once the stopped holder's TTL ran out, or be
// refused while its tree holds it) never runs beside any of it; continued,
// the holder either resumes (it still holds the lock) or ends with 76
// without its tree running again.
func TestScorecardJobControlExclusion(t *testing.T) {
	o := runStoppedHolder(t, syscall.SIGTSTP)
	if o.ranWhileStopped {
		t.Errorf("the TSTPed holder's tree ran while the holder was stopped")
	}
	switch {
	case o.holder.code == 76:
		if o.ranAfterResume {
			t.Errorf("the resumed holder lost its lock (76) but its tree ran after the CONT")
		}
	case o.holder.code == 143:
		if o.second.code == 0 {
			t.Errorf("the second run held the lock (exit 0), yet the resumed holder ran on to the TERM")
		}
	default:
		t.Errorf("the resumed holder exited %d, want 76 (lock lost, tree KILLed) or 143 (still its lock, TERMed)\nstderr: %s", o.holder.code, o.holder.stderr)
	}
	if o.second.code != 0 && o.second.code != 75 && o.second.code != 73 {
		t.Errorf("second run exited %d, want 0 (took the expired lock), 75 (refused) or 73 (the stopped holder sat on the guard)\nstderr: %s", o.second.code, o.second.stderr)
	}
	assertNoPanic(t, "holder", o.holder.stderr)
	t.Logf("kill -TSTP: tree ran while stopped %v; second run %d (stderr %q); holder %d", o.ranWhileStopped, o.second.code, o.second.stderr, o.holder.code)
}

// TestScorecardJobControlExclusionNegativeControl: a SIGSTOP (which withlock
// cannot catch, as TSTP was before) stops withlock alone, and the row's
// check sees its tree run on while it is stopped.
func TestScorecardJobControlExclusionNegativeControl(t *testing.T) {
	o := runStoppedHolder(t, syscall.SIGSTOP)
	if !o.ranWhileStopped {
		t.Fatalf("SIGSTOPped holder: its tree did not run on (second run %d): the row's check cannot fail", o.second.code)
	}
	t.Logf("negative control: SIGSTOP of withlock leaves its tree running; second run %d, holder %d", o.second.code, o.holder.code)
}

// brokenWhileStopped stops a holder with TSTP, breaks its lock with
// `withlock break --force`, continues it and returns how it ended and
// whether its tree ran after the CONT.
func brokenWhileStopped(t *testing.T, extra ...string) (holder outcome, ranAfter bool, tk *ticking) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	tk = startTicking(t, dir, "job", extra...)
	signalProc(t, tk.p, syscall.SIGTSTP)
	tk.waitStopped(t)
	if _, stderr, code := runWithlock(t, "break", "--dir", dir, "--force", "job"); code != 0 {
		t.Fatalf("withlock break --force job: exit %d\nstderr: %s", code, stderr)
	}
	before := tk.sizes()
	signalProc(t, tk.p, syscall.SIGCONT)
	ranAfter = tk.grewOver(time.Second)
	if !ranAfter {
		var err error
		holder, err = tk.p.wait(defaultDeadline)
		if err != nil {
			t.Fatal(err)
		}
		ranAfter = tk.sizes() != before
	}
	return holder, ranAfter, tk
}

// TestScorecardResumedAfterBreak: a holder whose lock was broken while it
// was stopped KILLs its tree before any of it runs again: exit 76, nothing
// ticks after the CONT, the lock is free.
func TestScorecardResumedAfterBreak(t *testing.T) {
	holder, ranAfter, tk := brokenWhileStopped(t)
	if ranAfter || holder.code != 76 {
		t.Errorf("continued after break --force: exit %d, tree ran again %v; want 76 and no run\nstderr: %s", holder.code, ranAfter, holder.stderr)
	}
	assertNoPanic(t, "resumed holder", holder.stderr)
	assertFreeNow(t, tk.dir, tk.runID, "the resumed holder's exit")
}

// TestScorecardResumedAfterBreakNegativeControl: with --on-lock-lost warn
// (the command may run on without the lock, by request) the tree runs again
// after the CONT, and the row's check sees it.
func TestScorecardResumedAfterBreakNegativeControl(t *testing.T) {
	_, ranAfter, tk := brokenWhileStopped(t, "--on-lock-lost", "warn")
	if !ranAfter {
		t.Fatalf("--on-lock-lost warn: the tree did not run after the CONT: the row's check cannot fail")
	}
	signalProc(t, tk.p, syscall.SIGTERM)
	if _, err := tk.p.wait(defaultDeadline); err != nil {
		t.Fatal(err)
	}
}
