package main

import (
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"
	"golang.org/x/term"

	"github.com/withlock/withlock/supervisor"
)

// Flags shared by every command that runs a child (run, scope).
func superviseFlags() []cli.Flag {
	return []cli.Flag{
		&durFlag{Name: "wait", Config: durOpts{forever: true}, Usage: "wait up to `DUR` for the lock: seconds, a duration (30s, 5m) or forever (default: do not wait)"},
		&durFlag{Name: "grace", Value: 10 * time.Second, Usage: "TERM→KILL grace when tearing the child down: `DUR` in seconds or a duration (500ms, 1m)"},
		&durFlag{Name: "timeout", Usage: "kill the child after `DUR` (seconds or a duration: 90s, 2h) and exit 124, like timeout(1) (default: none)"},
		&cli.IntFlag{Name: "conflict-exit-code", Value: exitTempFail, Usage: "exit status when the lock is held by someone else",
			Validator: check(func(n int) bool { return n >= 0 && n <= 255 }, "must be 0..255")},
		&cli.StringFlag{Name: "on-lock-lost", Value: "kill", Usage: "when the lock is lost while the child runs: kill|warn", Validator: oneOf("kill", "warn")},
		&cli.BoolFlag{Name: "die-with-parent", Usage: "end (tearing the child down) when withlock's parent dies"},
		&cli.BoolFlag{Name: "keep-orphans", Usage: "let daemons the child left behind live on after it exits"},
	}
}

// lostPolicies are the words of --on-lock-lost.
var lostPolicies = map[string]supervisor.LostPolicy{"kill": supervisor.KillOnLost, "warn": supervisor.WarnOnLost}

// Logging flags, on every command.
func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-format", Value: "console", Usage: "console|json", Validator: oneOf("console", "json")},
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug|info|warn|error (info by default with --log-format json)",
			Validator: check(func(s string) bool { _, err := zerolog.ParseLevel(s); return err == nil && s != "" }, "want debug, info, warn or error")},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing on conflict (errors still print)"},
	}
}

// check is a flag's Validator: a value is refused with msg unless ok.
// urfave/cli names the flag and the value (exit 64).
func check[T any](ok func(T) bool, msg string) func(T) error {
	return func(v T) error {
		if !ok(v) {
			return errors.New(msg)
		}
		return nil
	}
}

// oneOf is the Validator of a flag that takes one of words.
func oneOf(words ...string) func(string) error {
	return check(func(s string) bool { return slices.Contains(words, s) }, "want "+strings.Join(words, " or "))
}

// newLogger builds the logger from the logging flags, writing to out
// (stderr, or a writer that shares stderr with the waiting line). The
// console form is one plain line per event, prefixed "withlock:".
func newLogger(c *cli.Command, out io.Writer) zerolog.Logger {
	level, _ := zerolog.ParseLevel(c.String("log-level")) // checked by the flag's Validator
	if c.String("log-format") == "json" {
		if !c.IsSet("log-level") {
			level = zerolog.InfoLevel // a machine reading JSON wants the events, not just problems
		}
		return zerolog.New(out).Level(level).With().Timestamp().Logger()
	}
	w := zerolog.ConsoleWriter{
		Out:         out,
		NoColor:     !term.IsTerminal(int(os.Stderr.Fd())),
		PartsOrder:  []string{zerolog.LevelFieldName, zerolog.MessageFieldName},
		FormatLevel: func(any) string { return "withlock:" },
		// The message names everything a person needs; the fields that
		// only machines want stay in the JSON form.
		FieldsExclude: []string{"event", "run_id", "holder_pid"},
	}
	return zerolog.New(w).Level(level)
}

// lockFlags are where run locks live, for run, status and break: --dir,
// --backend and the etcd flags; then more, the command's own.
func lockFlags(more ...[]cli.Flag) []cli.Flag {
	return slices.Concat(append([]cli.Flag{dirFlag(), backendFlag()}, etcdFlags()...), slices.Concat(more...))
}

// dirFlag is every --dir flag (run, status, break, gc): where the lock
// directory is when the flag is not given (filelock.ResolveDir).
func dirFlag() cli.Flag { return &cli.StringFlag{Name: "dir", Usage: dirUsage} }

const dirUsage = "lock directory (else $WITHLOCK_DIR, $NEXUSCORE_RUN_LOCK_DIR, /run/withlock for root, /tmp/withlock-UID for others)"

// scopeFileFlag is every --scope-file flag (scope, status, break): the
// registry is in the run lock's default dir, not the one --dir or
// $WITHLOCK_DIR names (scope.FilePath).
func scopeFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "scope-file", Usage: "scope registry (else $WITHLOCK_SCOPE_FILE, /run/withlock/scope.lock for root, /tmp/withlock-UID/scope.lock for others)"}
}

// semFlags are run's flags for semaphores and shared locks (SPEC §6).
func semFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max", Usage: "a counting semaphore: up to `N` holders of RUN_ID at once, each told its WITHLOCK_SLOT (0…N-1)",
			Validator: check(func(n int) bool { return n >= 1 }, "must be at least 1")},
		&cli.BoolFlag{Name: "shared", Usage: "hold RUN_ID shared, as flock -s: shared holders run together; a plain (exclusive) run of RUN_ID waits for them and keeps new ones out"},
	}
}

// checkSlotFlags refuses --max with --shared (exit 64).
func checkSlotFlags(c *cli.Command) error {
	if c.IsSet("max") && c.Bool("shared") {
		return usageError("run: --max and --shared exclude each other")
	}
	return nil
}
