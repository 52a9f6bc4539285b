package integration

import (
	"slices"
	"strings"
	"testing"
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
