package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// renderMan writes withlock(1) for app to a file and formats it with
// man -l as a user reading it would see it (no pager, plain text).
func renderMan(t *testing.T, app *cli.Command) (source, text string) {
	t.Helper()
	if _, err := exec.LookPath("man"); err != nil {
		t.Skip("man not installed (.ci/run installs man-db): cannot render the page")
	}
	source = manPage(app, "2026-12-01")
	path := filepath.Join(t.TempDir(), "withlock.1")
	if err := os.WriteFile(path, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("man", "-l", path)
	cmd.Env = append(os.Environ(), "MANWIDTH=100", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("man -l: %v\n%s", err, stderr.String())
	}
	return source, string(out)
}

// groff in its strictest mode finds nothing to warn about.
func TestManPageGroffClean(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff not installed (.ci/run installs it): cannot check the page")
	}
	cmd := exec.Command("groff", "-man", "-ww", "-z")
	cmd.Stdin = strings.NewReader(manPage(newApp(), "2026-12-01"))
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("groff -man -ww -z: %v\n%s", err, out)
	}
}

func TestManPageSections(t *testing.T) {
	source, text := renderMan(t, newApp())
	for _, r := range source {
		if r > 0x7e || r < ' ' && r != '\n' {
			t.Fatalf("source has %q: it must be plain ASCII (non-ASCII as \\[uXXXX])", r)
		}
	}
	last := -1
	for _, s := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "SEE ALSO"} {
		i := strings.Index(text, "\n"+s+"\n")
		if i < 0 {
			t.Fatalf("no section %s in the rendered page", s)
		}
		if i < last {
			t.Errorf("section %s out of order", s)
		}
		last = i
	}
	// What the old page lost or garbled: markdown left over, empty
	// defaults on every flag, roff escapes that did not render.
	for _, bad := range []string{"‹", "›", `=""`, `\f`, `\(`, `\[`, "``"} {
		if strings.Contains(text, bad) {
			t.Errorf("rendered page contains %q", bad)
		}
	}
	if m := regexp.MustCompile(`\*[a-z][^*\n]*\*`).FindString(text); m != "" {
		t.Errorf("rendered page has markdown emphasis left over: %q", m)
	}
	for _, want := range []string{
		"WITHLOCK_DIR", "NEXUSCORE_RUN_LOCK_DIR", "WITHLOCK_TTL", "NEXUSCORE_RUN_LOCK_TTL_SECONDS",
		"WITHLOCK_SCOPE_FILE", "WITHLOCK_BACKEND", "WITHLOCK_RUN_ID", "WITHLOCK_LOCK_ID",
		"WITHLOCK_LOCK_FILE", "WITHLOCK_FENCING_TOKEN", "WITHLOCK_SCOPE_NAME",
	} {
		if !strings.Contains(section(text, "ENVIRONMENT"), want) {
			t.Errorf("ENVIRONMENT does not describe %s", want)
		}
	}
	for _, want := range []string{"/run/withlock", "/tmp/withlock-<uid>", ".lock", ".guard", ".fence", ".stale.", "scope.lock"} {
		if !strings.Contains(section(text, "FILES"), want) {
			t.Errorf("FILES does not name %s", want)
		}
	}
	for _, want := range []string{"/usr/bin/withlock run", "[Service]", "ExecStart=/usr/bin/withlock", "resume-run r-42"} {
		if !strings.Contains(section(text, "EXAMPLES"), want) {
			t.Errorf("EXAMPLES lacks %q", want)
		}
	}
	for _, want := range []string{"flock(1)", "timeout(1)", "tini(1)"} {
		if !strings.Contains(section(text, "SEE ALSO"), want) {
			t.Errorf("SEE ALSO lacks %s", want)
		}
	}
	exits := section(text, "EXIT STATUS")
	for _, code := range []int{exitUsage, exitCantCreate, exitTempFail, exitLockLost, exitTimeout, exitNotExec, exitNotFound} {
		if !regexp.MustCompile(`(?m)^\s+` + strconv.Itoa(code) + `\s`).MatchString(exits) {
			t.Errorf("EXIT STATUS does not list %d", code)
		}
	}
	if !strings.Contains(exits, "128+N") {
		t.Error("EXIT STATUS does not list 128+N")
	}
}

// Every command and every flag a command accepts is in the page, under that
// command's heading in OPTIONS, and in the SYNOPSIS.
func TestManPageHasEveryFlag(t *testing.T) {
	app := newApp()
	_, text := renderMan(t, app)
	if missing := missingFromMan(text, app); len(missing) > 0 {
		t.Errorf("not in the man page: %s", strings.Join(missing, "; "))
	}

	// Negative control: a flag added after the page was made is reported.
	for _, c := range app.Commands {
		if c.Name == "gc" {
			c.Flags = append(c.Flags, &cli.BoolFlag{Name: "not-in-the-page", Usage: "x"})
		}
	}
	if missing := missingFromMan(text, app); len(missing) != 1 || !strings.Contains(missing[0], "--not-in-the-page") {
		t.Errorf("missingFromMan did not report the one added flag: %q", missing)
	}
}

func missingFromMan(text string, app *cli.Command) []string {
	var missing []string
	synopsis, options := section(text, "SYNOPSIS"), section(text, "OPTIONS")
	for _, cmd := range manCommands(app.Commands, "") {
		if !strings.Contains(synopsis, "withlock "+cmd.path+" ") && !strings.Contains(synopsis, "withlock "+cmd.path+"\n") {
			missing = append(missing, "withlock "+cmd.path+" in SYNOPSIS")
		}
		flags := pageFlags(cmd.Flags)
		if len(flags) == 0 {
			continue
		}
		sub := subsection(options, "withlock "+cmd.path)
		for _, f := range flags {
			for _, n := range f.Names() {
				if !regexp.MustCompile(`(?m)^\s+(-\S+, )*` + regexp.QuoteMeta(flagWord(n)) + `[ ,\n]`).MatchString(sub) {
					missing = append(missing, flagWord(n)+" of withlock "+cmd.path)
				}
			}
		}
	}
	return missing
}

// section is the text of a top-level section of a rendered page.
func section(text, name string) string {
	_, after, ok := strings.Cut(text, "\n"+name+"\n")
	if !ok {
		return ""
	}
	if i := regexp.MustCompile(`\n[A-Z][A-Z ]+\n`).FindStringIndex(after); i != nil {
		return after[:i[0]+1]
	}
	return after
}

// subsection is the text under a subsection heading (indented 3) of a section.
func subsection(text, name string) string {
	_, after, ok := strings.Cut(text, "\n   "+name+"\n")
	if !ok {
		return ""
	}
	if i := regexp.MustCompile(`\n   \S[^\n]*\n`).FindStringIndex(after); i != nil {
		return after[:i[0]+1]
	}
	return after
}
