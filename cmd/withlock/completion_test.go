package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	app := newApp()
	runIDs := func(dir string) []candidate {
		return []candidate{{word: "nightly-" + dir}, {word: "r-42"}}
	}
	words := func(c completion) []string {
		var out []string
		for _, w := range c.words {
			out = append(out, w.word)
		}
		return out
	}
	for _, tc := range []struct {
		line      string // words after "withlock"; the last is the one being completed
		kind      string
		child     int
		want      []string // exactly these words (nil: not checked)
		contains  []string
		forbidden []string
	}{
		{line: "", kind: "words", contains: []string{"run", "status", "break", "gc", "scope", "completion"}, forbidden: []string{"gen-man", "__complete", "help"}},
		{line: "-", kind: "words", contains: []string{"--help", "--version"}},
		{line: "st", kind: "words", want: []string{"status"}},
		{line: "run --w", kind: "words", want: []string{"--wait"}},
		{line: "run --log-format ", kind: "words", want: []string{"console", "json"}},
		{line: "run --on-lock-lost ", kind: "words", want: []string{"kill", "warn"}},
		{line: "run --dir ", kind: "dirs"},
		{line: "run ", kind: "words", want: []string{"nightly-", "r-42"}},
		{line: "run --dir /x ", kind: "words", want: []string{"nightly-/x", "r-42"}},
		{line: "run --dir=/y r", kind: "words", want: []string{"r-42"}},
		{line: "run --wait 5 job ", kind: "commands", want: nil},
		{line: "run job ec", kind: "commands"},
		{line: "run job ls -l", kind: "child", child: 2},
		{line: "run --wait 5 job -- ls ", kind: "child", child: 5},
		{line: "run job -- ", kind: "commands"},
		{line: "run -q job --grace 5 ", kind: "commands"},
		{line: "status ", kind: "words", want: []string{"nightly-", "r-42"}},
		{line: "status r-42 n", kind: "words", want: []string{"nightly-"}},
		{line: "break ", kind: "words", want: []string{"nightly-", "r-42"}},
		{line: "break --signal --grace 3 r", kind: "words", want: []string{"r-42"}},
		{line: "scope ", kind: "commands", want: []string{"status", "reset"}},
		{line: "scope --allow /p:write -- ma", kind: "commands"},
		{line: "scope --allow /p:write make -j", kind: "child", child: 3},
		{line: "scope reset --", kind: "words", contains: []string{"--scope-file", "--help"}},
		{line: "completion ", kind: "words", want: []string{"bash", "zsh", "fish"}},
		{line: "gc ", kind: "words", contains: []string{"--older-than", "--dry-run", "-n"}},
		{line: "nosuch ", kind: "words", want: []string{}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got := complete(app, strings.Split(tc.line, " "), runIDs)
			if got.kind != tc.kind || got.child != tc.child {
				t.Fatalf("kind %q child %d, want %q child %d (words %q)", got.kind, got.child, tc.kind, tc.child, words(got))
			}
			w := words(got)
			if tc.want != nil && !(len(w) == 0 && len(tc.want) == 0) && !reflect.DeepEqual(w, tc.want) {
				t.Errorf("words %q, want %q", w, tc.want)
			}
			for _, c := range tc.contains {
				if !slices.Contains(w, c) {
					t.Errorf("words %q lack %q", w, c)
				}
			}
			for _, c := range tc.forbidden {
				if slices.Contains(w, c) {
					t.Errorf("words %q offer %q", w, c)
				}
			}
		})
	}
}

// Every command offers each of its flags once (the old bash script listed
// one twice), --help included.
func TestCompleteFlagsOnce(t *testing.T) {
	app := newApp()
	for _, cmd := range manCommands(app.Commands, "") {
		line := strings.Split(cmd.path, " ")
		got := complete(app, append(line, "-"), listRunIDs)
		seen := map[string]bool{}
		for _, c := range got.words {
			if seen[c.word] {
				t.Errorf("withlock %s: %s offered twice", cmd.path, c.word)
			}
			seen[c.word] = true
		}
		for _, f := range visibleFlags(cmd.Flags) {
			for _, n := range f.Names() {
				if !seen[flagWord(n)] {
					t.Errorf("withlock %s: %s not offered", cmd.path, flagWord(n))
				}
			}
		}
		if !seen["--help"] {
			t.Errorf("withlock %s: --help not offered", cmd.path)
		}
	}
}
