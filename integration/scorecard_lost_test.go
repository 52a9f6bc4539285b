package integration

// Scorecard row "lock lost" and its negative control: holder A is stopped
// (SIGSTOP) past its TTL. Its command's tree (A itself, stopped, and its
// child) still holds A's tree file, so the expired lock is NOT reclaimed:
// a run meanwhile gets 75 (SPEC §3: the lock lives as long as the tree;
// before issue 15 this run took the lock beside A's child). The lock is
// then lost the way an operator takes it, `withlock break --force`, and B
// starts; A resumes. A must find out at its next renewal, kill its child
// and exit 76, and B's lock must survive A; the fencing token must have
// grown. With the broken-lockid failpoint (renew/release skip the
// lock_id check) the same scenario must end with B's lock overwritten or
// removed by A.

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks"
)

// lockLostHolder is A's and B's child: it records its lock id, pid and
// (last, as the sign that it runs) fencing token, exits 0 on USR1 (so a holder that never learns it lost the
// lock can be ended by hand), and otherwise sleeps.
const lockLostHolder = `
echo "$WITHLOCK_LOCK_ID" >"$1.lockid"
echo $$ >"$1.pid"
echo "$WITHLOCK_FENCING_TOKEN" >"$1.token.tmp" && mv "$1.token.tmp" "$1.token"
trap 'exit 0' USR1
sleep 60 & wait
`

// lockLostOutcome is what the scenario observed.
type lockLostOutcome struct {
	aCode, aToken, bToken int
	aEndedByItself        bool // A exited without being asked (USR1)
	refusedWhileStopped   bool // a run while A was stopped past its TTL exited 75
	aChildAlive           bool // A's child still alive after A ended
	bLockIntact           bool // after A ended, the lock file still carried B's lock id
	bLockID, seenLockID   string
}

func TestScorecardLockLost(t *testing.T) {
	o := runLockLost(t, binary(t))
	if !o.aEndedByItself || o.aCode != 76 {
		t.Errorf("old holder: ended by itself %v, exit %d; want it to notice the lost lock and exit 76", o.aEndedByItself, o.aCode)
	}
	if !o.refusedWhileStopped {
		t.Error("a run while the holder was stopped past its TTL was not refused with 75: two holders")
	}
	if o.aChildAlive {
		t.Error("old holder's child still alive after the holder exited: want it killed")
	}
	if o.bToken <= o.aToken {
		t.Errorf("fencing token: old holder %d, new holder %d; want strictly larger for the new holder", o.aToken, o.bToken)
	}
	if !o.bLockIntact {
		t.Errorf("after the old holder ended the lock file carries lock id %q, want the new holder's %q", o.seenLockID, o.bLockID)
	}
	t.Logf("lock lost: old holder exit %d, tokens %d → %d, new holder's lock intact %v", o.aCode, o.aToken, o.bToken, o.bLockIntact)
}

// TestScorecardNegativeControlBrokenLockID: with renew and release skipping
// the lock_id check the lock-lost row's property must break: the resumed
// old holder does not notice, and its renewal or release overwrites or
// removes the new holder's lock.
func TestScorecardNegativeControlBrokenLockID(t *testing.T) {
	o := runLockLost(t, taggedBinary(t, tagBrokenLockID))
	if o.aCode == 76 && o.bLockIntact {
		t.Fatalf("broken build: old holder exited 76 and the new holder's lock survived: the lock-lost row cannot tell a broken lock_id check")
	}
	if o.bLockIntact {
		t.Errorf("broken build: the new holder's lock survived the old holder (exit %d); want it overwritten or removed", o.aCode)
	}
	t.Logf("broken lock_id check: old holder exit %d (ended by itself %v), new holder's lock intact %v (file now carries %q) — the row fails as it should",
		o.aCode, o.aEndedByItself, o.bLockIntact, o.seenLockID)
}

func runLockLost(t *testing.T, bin string) lockLostOutcome {
	t.Helper()
	work := t.TempDir()
	dir := filepath.Join(work, "locks")
	const runID = "lost"
	env := testEnv(t)
	a := startProc(bin, env, "run", "--dir", dir, "--ttl", "1s", "--grace", "2s", runID, "--", "sh", "-c", lockLostHolder, "sh", filepath.Join(work, "a"))
	t.Cleanup(func() { stopProc(a) })
	if !waitForFile(filepath.Join(work, "a.token"), 10*time.Second, a.ended) {
		o, _ := a.wait(time.Second)
		t.Fatalf("holder A never started its child: exit %d\nstderr: %s", o.code, o.stderr)
	}
	stopOutsideGuard(t, a, filepath.Join(dir, locks.Key(runID)+".guard"))

	waitFor(t, 10*time.Second, func() bool {
		p, err := readLock(dir, runID)
		return err == nil && time.Unix(0, int64(p.ExpiresAt*1e9)).Before(time.Now())
	}, "A's lock to expire while A is stopped")
	refused, err := execWithlock(bin, env, defaultDeadline, "run", "--dir", dir, runID, "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	broke, err := execWithlock(bin, env, defaultDeadline, "break", "--force", "--dir", dir, runID)
	if err != nil || broke.code != 0 {
		t.Fatalf("break --force of the stopped holder's lock: exit %d (%v)\n%s", broke.code, err, broke.stderr)
	}
	b := startProc(bin, env, "run", "--dir", dir, "--ttl", "30s", "--grace", "2s", runID, "--", "sh", "-c", lockLostHolder, "sh", filepath.Join(work, "b"))
	t.Cleanup(func() { stopProc(b) })
	if !waitForFile(filepath.Join(work, "b.token"), 10*time.Second, b.ended) {
		o, _ := b.wait(time.Second)
		t.Fatalf("holder B did not take the expired lock: exit %d\nstderr: %s", o.code, o.stderr)
	}
	out := lockLostOutcome{
		refusedWhileStopped: refused.code == 75,
		aToken:              readInt(t, filepath.Join(work, "a.token")),
		bToken:              readInt(t, filepath.Join(work, "b.token")),
		bLockID:             readTrimmed(t, filepath.Join(work, "b.lockid")),
	}
	aLockID := readTrimmed(t, filepath.Join(work, "a.lockid"))
	aChild := readInt(t, filepath.Join(work, "a.pid"))

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// A renews at once on resuming (its ticker is overdue). A sound A then
	// exits 76; a broken A rewrites the lock with its own lock id.
	pollUntil(10*time.Second, func() bool {
		p, err := readLock(dir, runID)
		return a.ended() || (err == nil && p.LockID == aLockID)
	})
	out.aEndedByItself = a.ended()
	if !out.aEndedByItself {
		_ = a.cmd.Process.Signal(syscall.SIGUSR1) // forwarded: the child exits 0, A releases
	}
	ao, err := a.wait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out.aCode = ao.code
	assertNoPanic(t, "holder A", ao.stderr)
	out.aChildAlive = alive(aChild)
	switch p, err := readLock(dir, runID); {
	case err == nil:
		out.seenLockID = p.LockID
	case errors.Is(err, fs.ErrNotExist):
		out.seenLockID = "(no lock file)"
	default:
		out.seenLockID = "(" + err.Error() + ")"
	}
	out.bLockIntact = out.seenLockID == out.bLockID && !b.ended()

	_ = b.cmd.Process.Signal(syscall.SIGUSR1)
	if _, err := b.wait(10 * time.Second); err != nil {
		t.Error(err)
	}
	return out
}

// stopOutsideGuard SIGSTOPs p at a moment when it does not hold the run
// id's guard flock (a holder stopped inside a renewal would block every
// other withlock for the guard's bound; that is another row's business).
func stopOutsideGuard(t *testing.T, p *execProc, guard string) {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, func() bool { pr, ok := readProc(p.cmd.Process.Pid); return ok && pr.state == 'T' }, "the holder to stop")
		if !guardHeld(t, guard) {
			return
		}
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		waitFor(t, 5*time.Second, func() bool { return !guardHeld(t, guard) }, "the holder to finish its renewal")
	}
	t.Fatal("holder always stopped inside its guard")
}

// guardHeld reports whether someone holds the flock on guard.
func guardHeld(t *testing.T, guard string) bool {
	t.Helper()
	f, err := os.OpenFile(guard, os.O_RDWR, 0)
	if err != nil {
		return false // no guard file: nobody holds it
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
