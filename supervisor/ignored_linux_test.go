package supervisor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// ignoreIntHup runs the command after it with INT and HUP ignored, as
// nohup and `sh -c 'cmd &'` leave them.
var ignoreIntHup = []string{"sh", "-c", `trap "" INT HUP; exec "$@"`, "sh"}

// sigIgn parses a "SigIgn:\t<hex>" line into a mask.
func sigIgn(t *testing.T, status string) uint64 {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("SigIgn %q: %v", v, err)
			}
			return m
		}
	}
	t.Fatalf("no SigIgn in %q", status)
	return 0
}

func ignores(mask uint64, sig syscall.Signal) bool { return mask&(1<<(uint(sig)-1)) != 0 }

// TestParentIgnoredSignalsAreNotInherited: withlock started with INT and HUP
// ignored starts its child with them at their defaults.
func TestParentIgnoredSignalsAreNotInherited(t *testing.T) {
	// Control: the wrapper really leaves a command with both ignored.
	out, err := exec.Command(ignoreIntHup[0], append(ignoreIntHup[1:], "grep", "SigIgn", "/proc/self/status")...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if m := sigIgn(t, string(out)); !ignores(m, syscall.SIGINT) || !ignores(m, syscall.SIGHUP) {
		t.Fatalf("control: SigIgn %x does not ignore INT and HUP; the test could not fail", m)
	}

	childOut := filepath.Join(t.TempDir(), "child-status")
	h := startHelper(t, helperOpts{wrap: ignoreIntHup, argv: []string{"grep", "SigIgn", "/proc/self/status"},
		env: []string{"HELPER_STDOUT=" + childOut}})
	r := h.wait(t)
	if !slices.Contains(r.IgnoredAtStart, int(syscall.SIGINT)) || !slices.Contains(r.IgnoredAtStart, int(syscall.SIGHUP)) {
		t.Fatalf("helper started with %v ignored, want INT and HUP", r.IgnoredAtStart)
	}
	b, err := os.ReadFile(childOut)
	if err != nil {
		t.Fatal(err)
	}
	if m := sigIgn(t, string(b)); ignores(m, syscall.SIGINT) || ignores(m, syscall.SIGHUP) {
		t.Errorf("child's SigIgn %x still ignores INT or HUP", m)
	}
}

// TestParentIgnoredSignalIsNotForwarded: a HUP that withlock's parent told
// it to ignore (nohup) is not passed on to the child either.
func TestParentIgnoredSignalIsNotForwarded(t *testing.T) {
	trapFile := filepath.Join(t.TempDir(), "trap")
	h := startHelper(t, helperOpts{wrap: ignoreIntHup, argv: []string{os.Args[0], trapArg},
		env: []string{"TRAP_FILE=" + trapFile, "HELPER_GRACE=10s"}})
	waitFor(t, defaultWait, "trap armed", func() bool { return len(readLines(trapFile)) > 0 })
	h.signal(t, syscall.SIGHUP)
	h.signal(t, syscall.SIGUSR1)
	waitRecorded(t, trapFile, syscall.SIGUSR1)
	h.signal(t, syscall.SIGTERM)
	h.wait(t)
	if slices.Contains(readLines(trapFile), strconv.Itoa(int(syscall.SIGHUP))) {
		t.Errorf("HUP, ignored by withlock's parent, reached the child: %v", readLines(trapFile))
	}
}
