package integration

import (
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// cmd/withlock/internal/oneproc drops GOMAXPROCS to 1 before the standard
// library's package inits fill the second P's allocation cache: dropping a
// P later costs ~0.1 ms of page faults (see its doc). That holds only while
// Go's init order puts it ahead of them, so check the order the binary
// reports.
func TestOneprocInitialisesBeforeTheStandardLibrary(t *testing.T) {
	cmd := withlockCommand(t, "--version")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("withlock --version: %v\n%s", err, out)
	}
	var order []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" {
			order = append(order, f[1])
		}
	}
	first := slices.Index(order, "github.com/withlock/withlock/cmd/withlock/internal/oneproc")
	if first < 0 {
		t.Fatalf("oneproc is not in the init trace:\n%s", out)
	}
	for _, pkg := range []string{"os", "unicode", "time", "internal/godebug", "github.com/urfave/cli/v2"} {
		if i := slices.Index(order, pkg); i >= 0 && i < first {
			t.Errorf("%s initialises before oneproc (order: %s)", pkg, strings.Join(order[:first+1], ", "))
		}
	}
}

// withlock widens the timer slack of its own sysmon (internal/cpupin); its
// child starts with the slack withlock itself was given. (That a thread
// sysmon cloned forks with the right slack too is cpupin's own test.)
func TestChildKeepsTheTimerSlackWithlockWasGiven(t *testing.T) {
	runtime.LockOSThread() // the slack below is this thread's, and exec.Cmd forks from it
	defer runtime.UnlockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const given = 3_000_000 // ns, unlike any default
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, given, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)
	stdout, stderr, code := runWithlock(t, "run", "--dir", t.TempDir(), "slack", "--", "cat", "/proc/self/timerslack_ns")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got := strings.TrimSpace(stdout); got != strconv.Itoa(given) {
		t.Errorf("child's timer slack %s ns, want the %d withlock was started with", got, given)
	}
}
