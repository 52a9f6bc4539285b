package supervisor_test

import (
	"os"
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

// childSigIgn supervises `grep SigIgn /proc/self/status` (through wrap, if
// any) and returns the child's ignored mask and the signals the helper
// itself started with ignored.
func childSigIgn(t *testing.T, wrap []string) (uint64, []int) {
	t.Helper()
	childOut := filepath.Join(t.TempDir(), "child-status")
	h := startHelper(t, helperOpts{wrap: wrap, argv: []string{"grep", "SigIgn", "/proc/self/status"},
		env: []string{"HELPER_STDOUT=" + childOut}})
	r := h.wait(t)
	b, err := os.ReadFile(childOut)
	if err != nil {
		t.Fatal(err)
	}
	return sigIgn(t, string(b)), r.IgnoredAtStart
}

// TestParentIgnoredSignalsAreInherited: withlock started with INT and HUP
// ignored (nohup, `trap "" HUP INT`, `sh -c 'cmd &'`) starts its child with
// them ignored too, as flock and tini do: logging out does not kill a
// command started under nohup.
func TestParentIgnoredSignalsAreInherited(t *testing.T) {
	m, ignored := childSigIgn(t, ignoreIntHup)
	if !slices.Contains(ignored, int(syscall.SIGINT)) || !slices.Contains(ignored, int(syscall.SIGHUP)) {
		t.Fatalf("helper started with %v ignored, want INT and HUP", ignored)
	}
	if !ignores(m, syscall.SIGINT) || !ignores(m, syscall.SIGHUP) {
		t.Errorf("child's SigIgn %x does not ignore INT and HUP", m)
	}
	// Control: without the wrapper the child ignores neither, so the check
	// above can fail.
	if m, _ := childSigIgn(t, nil); ignores(m, syscall.SIGINT) || ignores(m, syscall.SIGHUP) {
		t.Fatalf("control: a child of a plain helper ignores INT or HUP (SigIgn %x)", m)
	}
}

// TestParentIgnoredSignalIsNotForwarded: a HUP or INT that withlock's
// parent told it to ignore (nohup, `sh -c 'cmd &'`) does not reach withlock
// at all: it is neither forwarded nor a reason to stop.
func TestParentIgnoredSignalIsNotForwarded(t *testing.T) {
	trapFile := filepath.Join(t.TempDir(), "trap")
	h := startHelper(t, helperOpts{wrap: ignoreIntHup, argv: []string{os.Args[0], trapArg},
		env: []string{"TRAP_FILE=" + trapFile, "HELPER_GRACE=10s"}})
	waitFor(t, defaultWait, "trap armed", func() bool { return len(readLines(trapFile)) > 0 })
	h.signal(t, syscall.SIGHUP)
	h.signal(t, syscall.SIGINT)
	h.signal(t, syscall.SIGUSR1)
	waitRecorded(t, trapFile, syscall.SIGUSR1)
	h.signal(t, syscall.SIGTERM)
	r := h.wait(t)
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT} {
		if slices.Contains(readLines(trapFile), strconv.Itoa(int(sig))) {
			t.Errorf("%v, ignored by withlock's parent, reached the child: %v", sig, readLines(trapFile))
		}
	}
	if r.Status != 3 {
		t.Errorf("status %d, want the child's 3 (it exits on the TERM, not on an ignored INT)", r.Status)
	}
}
