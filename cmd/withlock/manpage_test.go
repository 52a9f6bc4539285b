package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// manPath is withlock(1), maintained by hand (make man installs it).
const manPath = "../../doc/withlock.1"

// groff in its strictest mode finds nothing to warn about.
func TestManPageGroffClean(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff not installed (.ci/run installs groff-base): cannot check the page")
	}
	out, err := exec.Command("groff", "-man", "-ww", "-z", manPath).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("groff -man -ww -z %s: %v\n%s", manPath, err, out)
	}
}

// man -l renders it, as a user reading it sees it, with no complaint: on a
// UTF-8 terminal and in the C locale of cron or `env -i`, where man renders
// ASCII and a character without an ASCII form is a troff warning.
func TestManPageRenders(t *testing.T) {
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man not installed (.ci/run installs man-db): cannot render the page")
	}
	for _, locale := range []string{"C.UTF-8", "C"} {
		cmd := exec.Command("man", "-l", manPath)
		cmd.Env = append(os.Environ(), "MANWIDTH=100", "MANPAGER=cat", "PAGER=cat", "LC_ALL="+locale)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil || stderr.Len() > 0 {
			t.Fatalf("LC_ALL=%s man -l: %v\n%s", locale, err, stderr.String())
		}
		for _, want := range []string{"WITHLOCK(1)", "SYNOPSIS", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("LC_ALL=%s: the rendered page lacks %q", locale, want)
			}
		}
	}
}

// Every command and every flag of the command line (the etcd flags too,
// which the file-only build hides) is in the page: a new one without
// documentation fails here.
func TestManPageCoversTheCommandLine(t *testing.T) {
	src, err := os.ReadFile(manPath)
	if err != nil {
		t.Fatal(err)
	}
	// The page as words: no font escapes, \- as -.
	text := regexp.MustCompile(`\\f[BIRP]`).ReplaceAllString(strings.ReplaceAll(string(src), `\-`, "-"), "")
	app := newApp()
	app.Writer = io.Discard
	if err := app.Run(context.Background(), []string{"withlock", "--version"}); err != nil {
		t.Fatal(err) // the run adds what urfave/cli adds: help, completion, --help, --version
	}
	mentions := func(word string) bool {
		return regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(word) + `([^\w-]|$)`).MatchString(text)
	}
	n := 0
	_ = app.Walk(func(c *cli.Command) error {
		if c.Name == "pwsh" || c.Name == "bash" || c.Name == "zsh" || c.Name == "fish" {
			return nil // the shells of completion, named in its synopsis line
		}
		if !strings.Contains(text, c.FullName()) {
			t.Errorf("the page does not mention the command %q", c.FullName())
		}
		for _, f := range c.Flags {
			for _, name := range f.Names() {
				n++
				if word := "--" + name; len(name) == 1 && !mentions("-"+name) || len(name) > 1 && !mentions(word) {
					t.Errorf("the page does not document %s's flag %q", c.FullName(), name)
				}
			}
		}
		return nil
	})
	if n < 40 {
		t.Errorf("checked %d flag names: the walk missed the commands", n)
	}
}
