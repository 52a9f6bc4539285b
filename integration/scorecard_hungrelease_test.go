package integration

// Scorecard row "a hung release never keeps withlock alive": the crash
// build blocks for ever in the release, after its ownership check, as a
// system call on a hung filesystem would (WITHLOCK_FAILPOINTS=hang=<point>). withlock must
// give up after its 5 s bound, log it, and exit with the command's own
// status; the lock it could not remove is a dead holder's once withlock has
// ended, and the next run takes it. The elapsed time is the row's control:
// an exit before the bound would mean the hang was never reached.

import (
	"github.com/withlock/withlock/internal/failpoint"
	"strings"
	"testing"
	"time"
)

func TestScorecardHungReleaseEnds(t *testing.T) {
	t.Parallel()
	bin := taggedBinary(t, tagCrashpoints)
	dir := t.TempDir()
	cmd := withlockCommand(t, "run", "--dir", dir, "hung", "--", "sh", "-c", "exit 3")
	cmd.Path, cmd.Args[0] = bin, bin
	cmd.Env = append(cmd.Env, failpoint.Env+"=hang=release:verified")
	start := time.Now()
	_, stderr, code := runCommand(t, cmd, 30*time.Second)
	took := time.Since(start)
	if code != 3 {
		t.Errorf("exit %d after a hung release, want the command's 3\nstderr: %s", code, stderr)
	}
	if !strings.Contains(stderr, "lock release timed out") {
		t.Errorf("stderr %q does not say the release timed out", stderr)
	}
	if took < 4500*time.Millisecond {
		t.Errorf("ended after %v, before the 5 s bound: the release never hung, so the row proves nothing", took)
	}
	if _, stderr, code := runWithlock(t, "run", "--dir", dir, "hung", "--", "true"); code != 0 {
		t.Errorf("the next run: exit %d, want 0 (the hung holder's lock is stale once it ended)\nstderr: %s", code, stderr)
	}
}
