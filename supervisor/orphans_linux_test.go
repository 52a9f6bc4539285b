package supervisor_test

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// daemonsScript leaves a setsid'd and a double-forked sleep behind and
// exits: both reparent to the supervisor (a subreaper).
const daemonsScript = `setsid sleep 300 & (sleep 301 &); exit 0`

// TestDaemonsAreGoneAfterRun: the main child exits at once, leaving a
// setsid'd and a double-forked grandchild; Run TERMs them, reaps them and
// returns with no descendant (and no zombie) left.
func TestDaemonsAreGoneAfterRun(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sh", "-c", daemonsScript}, env: []string{"HELPER_GRACE=10s"}})
	r := h.wait(t)
	t.Logf("Run with two daemons to stop took %d ms", r.ElapsedMS)
	if r.Status != 0 {
		t.Errorf("status %d, want 0 (the shell's own)", r.Status)
	}
	if r.Leftovers != 0 {
		t.Errorf("%d descendants (zombies included) of the supervisor left when Run returned", r.Leftovers)
	}
	if left := withToken(h.token); len(left) > 0 {
		t.Errorf("left running after Run: %v", left)
	}
	if zs := zombieChildren(t); len(zs) > 0 {
		t.Errorf("zombie children of the test process: %v", zs)
	}
}

// TestDaemonsSurviveWithKeepOrphans is the negative control of
// TestDaemonsAreGoneAfterRun: with the cleanup switched off the same
// scenario leaves both sleeps running, so the check above can fail.
func TestDaemonsSurviveWithKeepOrphans(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sh", "-c", daemonsScript},
		env: []string{"HELPER_GRACE=10s", "HELPER_KEEP_ORPHANS=1"}})
	h.wait(t)
	var running int
	waitFor(t, 10*time.Second, "both daemons seen running", func() bool {
		running = 0
		for _, state := range withToken(h.token) {
			if state != "Z" {
				running++
			}
		}
		return running >= 2
	})
	t.Logf("with KeepOrphans, %d processes survive the supervisor (killed in cleanup)", running)
}

// TestBackgroundSleepDoesNotHoldRun: `sh -c 'sleep 100 & exit 0'` returns
// promptly (the sleep dies of TERM) and leaves no sleep.
func TestBackgroundSleepDoesNotHoldRun(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sh", "-c", "sleep 100 & exit 0"}, env: []string{"HELPER_GRACE=10s"}})
	r := h.wait(t)
	t.Logf("sh -c 'sleep 100 & exit 0' supervised: Run returned after %d ms", r.ElapsedMS)
	if r.Status != 0 {
		t.Errorf("status %d, want 0", r.Status)
	}
	if r.ElapsedMS > 5000 {
		t.Errorf("Run took %d ms: it waited for the sleep instead of stopping it", r.ElapsedMS)
	}
	if left := withToken(h.token); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}

// TestTermAtRandomTimesLeavesNothing sends TERM 0–50 ms after the supervisor
// subscribed to signals (so during spawn as well as during the run) many
// times: every run ends 143 and nothing of the tree is left.
func TestTermAtRandomTimesLeavesNothing(t *testing.T) {
	runs := 25
	if testing.Short() {
		runs = 5
	}
	for i := range runs {
		h := startHelper(t, helperOpts{argv: []string{"sh", "-c", "setsid sleep 300 & (sleep 301 &); sleep 302"},
			env: []string{"HELPER_GRACE=2s"}})
		h.waitReady(t)
		time.Sleep(time.Duration(rand.IntN(51)) * time.Millisecond)
		h.signal(t, syscall.SIGTERM)
		r := h.wait(t)
		if r.Status != 143 {
			t.Errorf("run %d: status %d, want 143", i, r.Status)
		}
		if r.Leftovers != 0 {
			t.Errorf("run %d: %d descendants left when Run returned", i, r.Leftovers)
		}
		if left := withToken(h.token); len(left) > 0 {
			t.Errorf("run %d: left running: %v", i, left)
		}
	}
	if zs := zombieChildren(t); len(zs) > 0 {
		t.Errorf("zombie children of the test process: %v", zs)
	}
}

// TestDieWithParent: withlock's parent (a shell here) is KILLed; withlock
// gets TERM from the kernel and takes its whole tree down.
func TestDieWithParent(t *testing.T) {
	h := startHelper(t, helperOpts{wrap: []string{"sh", "-c", `"$@" & wait`, "sh"},
		argv: []string{"sh", "-c", "setsid sleep 300 & sleep 301"},
		env:  []string{"HELPER_GRACE=2s", "HELPER_DIE_WITH_PARENT=1"}})
	h.waitReady(t)
	waitFor(t, defaultWait, "the command's sleeps", func() bool { return len(withToken(h.token)) >= 4 })
	h.signal(t, syscall.SIGKILL) // the shell: the helper is its child
	_ = h.cmd.Wait()
	// The helper now belongs to init; it cannot be waited for, only watched.
	waitFor(t, defaultWait, "the helper and its tree to be gone", func() bool { return len(withToken(h.token)) == 0 })
	r := h.readResult(t)
	if r.Status != 143 {
		t.Errorf("status %d, want 143 (the command died of the forwarded TERM)", r.Status)
	}
}

// TestChildDiesWhenSupervisorIsKilled: withlock itself is SIGKILLed (no
// teardown can run); the direct child gets its parent-death KILL and does
// not run on without the lock.
func TestChildDiesWhenSupervisorIsKilled(t *testing.T) {
	h := startHelper(t, helperOpts{argv: []string{"sleep", "300"}, env: []string{"HELPER_GRACE=10s"}})
	h.waitReady(t)
	child := h.childPid(t)
	h.signal(t, syscall.SIGKILL)
	_ = h.cmd.Wait()
	waitFor(t, defaultWait, fmt.Sprintf("the child %d to die with its supervisor", child), func() bool {
		state, found := withToken(h.token)[child]
		return !found || state == "Z" // a zombie is dead, just not yet reaped by its new parent
	})
}
