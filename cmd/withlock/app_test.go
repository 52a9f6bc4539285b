package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"
)

// parseRun parses `withlock run …` (words split at spaces, ” an empty
// word) with the real command line and returns what runAction would get.
func parseRun(t *testing.T, line string) (runID string, argv []string, wait time.Duration, err error) {
	t.Helper()
	args := append([]string{"withlock"}, strings.Split(line, " ")...)
	for i, a := range args {
		if a == "''" {
			args[i] = ""
		}
	}
	app := newApp()
	for _, c := range app.Commands {
		c.Before = nil // no descriptor reserve in the test process
		if c.Name == "run" {
			c.Action = func(ctx context.Context, c *cli.Command) error {
				wait = c.Duration("wait")
				runID, argv, err = splitRunArgs(ctx, c)
				return err
			}
		}
	}
	if rerr := app.Run(context.WithValue(context.Background(), argsKey{}, args), args); err == nil {
		err = rerr
	}
	return runID, argv, wait, err
}

// The command line of SPEC §1: withlock's flags before RUN_ID or between
// RUN_ID and COMMAND, `--` optional, and COMMAND's words never withlock's.
func TestRunCommandLine(t *testing.T) {
	for _, c := range []struct {
		line, id, argv string
		wait           time.Duration
	}{
		{"run job ls -la", "job", "ls -la", 0},
		{"run --wait 5 job -- cmd", "job", "cmd", 5 * time.Second},
		{"run job --wait 5 cmd", "job", "cmd", 5 * time.Second},
		{"run job --wait=2.5 -- cmd --wait 9", "job", "cmd --wait 9", 2500 * time.Millisecond},
		{"run r-42 --wait 30s -- resume-run r-42 --wait x", "r-42", "resume-run r-42 --wait x", 30 * time.Second},
		{"run -q job --wait forever sh -c x", "job", "sh -c x", -1},
		{"run x echo files --dir /tmp/x", "x", "echo files --dir /tmp/x", 0},
		{"run x echo status break gc", "x", "echo status break gc", 0},
		{"run -- x true", "x", "true", 0},
		{"run x -- -- odd", "x", "-- odd", 0}, // only one -- after RUN_ID is withlock's
		{"run -- x -- odd", "x", "odd", 0},    // one ends the flags, one follows RUN_ID
		{"run --wait 1 -- -x -- odd", "-x", "odd", time.Second},
		{"run -- -- -- odd", "--", "odd", 0},
		{"run x --wait 1 -- -- odd", "x", "-- odd", time.Second},
		{"run -- x odd --", "x", "odd --", 0},
		{"run x -- -x", "x", "-x", 0},
		{"run x - y", "x", "- y", 0},
		// a -- right after COMMAND's first word is COMMAND's
		{"run x echo -- y", "x", "echo -- y", 0},
		{"run x echo -- --", "x", "echo -- --", 0},
		{"run x -- echo --", "x", "echo --", 0},
		{"run --wait 1 x echo -- --wait 2", "x", "echo -- --wait 2", time.Second},
		{"run h -- true", "h", "true", 0},
		{"run help true", "help", "true", 0},
	} {
		id, argv, wait, err := parseRun(t, c.line)
		if err != nil || id != c.id || !slices.Equal(argv, strings.Split(c.argv, " ")) || wait != c.wait {
			t.Errorf("withlock %s: run id %q, command %q, --wait %v, %v; want %q, %q, %v", c.line, id, argv, wait, err, c.id, c.argv, c.wait)
		}
	}
}

// Bad command lines: exit 64 and one line naming the problem, with a
// suggestion for a mistyped flag or command.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{"run --wiat 5s x true", `run: flag provided but not defined: -wiat; did you mean "--wait"?`},
		{"run x --timout=5 true", `run: flag provided but not defined: -timout; did you mean "--timeout"?`},
		{"runn x true", `unknown command "runn"; did you mean "run"?`},
		{"stauts", `unknown command "stauts"; did you mean "status"?`},
		{"version", `unknown command "version"; did you mean "--version"?`},
		{"gc --older 7d", `gc: flag provided but not defined: -older; did you mean "--older-than"?`},
		{"run --timeout", `run: flag needs an argument: --timeout`},
		{"run --timeout soon x true", `run: invalid value "soon" for flag -timeout: want seconds (5, 2.5) or a duration (90s, 5m), not negative`},
		{"run x", `run: missing COMMAND after RUN_ID "x"`},
		{"run -- --", `run: missing COMMAND after RUN_ID "--"`},
		{"run", `run: missing RUN_ID (usage: withlock run [flags] RUN_ID [--] COMMAND [ARGS...])`},
		{"run '' true", `run: empty RUN_ID`},
	} {
		_, _, _, err := parseRun(t, c.line)
		if code, msg := statusOf(err); err == nil || code != exitUsage || msg != c.want {
			t.Errorf("withlock %s: %d %q; want 64 %q", c.line, code, msg, c.want)
		}
	}
}

// A run id that spells a help alias is a run id.
func TestRunIDNamedLikeHelp(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"h", "help"} {
		if code := report(run([]string{"withlock", "run", "--dir", dir, id, "--", "true"})); code != 0 {
			t.Errorf("withlock run %s -- true: exit %d, want 0", id, code)
		}
	}
}
