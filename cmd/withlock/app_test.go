package main

import (
	"slices"
	"testing"
	"time"
)

func TestReorderArgs(t *testing.T) {
	app := newApp()
	cases := []struct{ in, want []string }{
		{[]string{"withlock", "run", "r-42", "--wait", "30s", "--", "resume-run", "r-42", "--wait", "x"},
			[]string{"withlock", "run", "--wait", "30s", "r-42", "--", "resume-run", "r-42", "--wait", "x"}},
		{[]string{"withlock", "run", "-q", "job", "--conflict-exit-code=0", "--", "true"},
			[]string{"withlock", "run", "-q", "--conflict-exit-code=0", "job", "--", "true"}},
		{[]string{"withlock", "run", "--dir", "/d", "job", "--", "sh", "-c", "exit 3"},
			[]string{"withlock", "run", "--dir", "/d", "job", "--", "sh", "-c", "exit 3"}},
		{[]string{"withlock", "--version"}, []string{"withlock", "--version"}},
		{[]string{"withlock"}, []string{"withlock"}},
	}
	for _, c := range cases {
		if got := reorderArgs(app, c.in); !slices.Equal(got, c.want) {
			t.Errorf("reorderArgs(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestParseWait(t *testing.T) {
	good := map[string]time.Duration{"0": 0, "30s": 30 * time.Second, "1.5": 1500 * time.Millisecond, "forever": -1, "2m": 2 * time.Minute}
	for in, want := range good {
		if got, err := parseWait(in); err != nil || got != want {
			t.Errorf("parseWait(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1s", "soon", "-3", "1x"} {
		if _, err := parseWait(in); err == nil {
			t.Errorf("parseWait(%q) accepted", in)
		} else if code, _ := statusOf(err); code != exitUsage {
			t.Errorf("parseWait(%q): status %d, want 64", in, code)
		}
	}
}

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
