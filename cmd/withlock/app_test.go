package main

import (
	"slices"
	"testing"
)

func TestSplitRunArgs(t *testing.T) {
	id, argv, err := splitRunArgs([]string{"job", "--", "echo", "--", "x"})
	if err != nil || id != "job" || !slices.Equal(argv, []string{"echo", "--", "x"}) {
		t.Fatalf("got %q %q %v", id, argv, err)
	}
	for _, bad := range [][]string{nil, {"--", "true"}, {"job"}, {"job", "--"}, {"", "--", "true"}} {
		if _, _, err := splitRunArgs(bad); err == nil {
			t.Errorf("splitRunArgs(%q) accepted", bad)
		}
	}
}

// A run id that spells a help alias is a run id.
func TestRunIDNamedLikeHelp(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"h", "help"} {
		if code := Main([]string{"withlock", "run", "--dir", dir, id, "--", "true"}); code != 0 {
			t.Errorf("withlock run %s -- true: exit %d, want 0", id, code)
		}
	}
}
