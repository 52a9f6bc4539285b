package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
)

var version = "" // set with -ldflags "-X main.version=..."; else from build info

// newApp is withlock's command line, parsed by urfave/cli: run and scope
// stop reading flags at the command they run (StopOnNthArg), a mistyped
// command or flag gets the library's suggestion, `withlock completion
// bash|zsh|fish` prints the library's completion script, and run ids
// complete from the lock directory.
func newApp() *cli.Command {
	app := &cli.Command{
		Name:                   "withlock",
		Usage:                  "take a lock, run a command under supervision, always clean up",
		Version:                versionString(),
		UseShortOptionHandling: true,
		Suggest:                true,
		EnableShellCompletion:  true,
		ConfigureShellCompletionCommand: func(c *cli.Command) {
			c.Hidden, c.HideHelpCommand = false, true
			c.Usage = "print the shell completion script (bash, zsh or fish)"
		},
		// One file per command.
		Commands:     []*cli.Command{runCommand(), breakCommand(), gcCommand(), scopeCommand(), statusCommand(), metricsCommand()},
		Action:       unknownCommand,
		OnUsageError: onUsageError,
		// Only main exits: keep urfave/cli from calling os.Exit.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
	}
	// What every command shares: a usage error is one line, never the
	// whole help; no "help" subcommand, which would take `withlock run h --
	// cmd` (run id "h") for itself (`withlock help run` and --help stay);
	// the check of the open-file limit (checkDescriptors) first, after
	// that of the run ids where there are some (checkRunIDs).
	for _, c := range app.Commands {
		c.HideHelpCommand = true
		c.OnUsageError = onUsageError
		c.Before = checkDescriptors
		if c.Name == "run" || c.Name == "status" || c.Name == "break" {
			c.ShellComplete = completeRunIDs
			c.Before = checkRunIDs
		}
	}
	return app
}

// onUsageError makes an error out of urfave/cli's parsing in c one line
// and exit 64; an unknown flag gets the library's suggestion, found as the
// library itself finds it for its own message.
func onUsageError(_ context.Context, c *cli.Command, err error, _ bool) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if s := cli.SuggestFlag(c.Flags, name, false); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
	}
	if path := c.Path()[1:]; len(path) > 0 {
		msg = strings.Join(path, " ") + ": " + msg // names the command: "run: "
	}
	return usageError("%s", msg)
}

// unknownCommand is the action of withlock itself: the help, or for a word
// that names no command a usage error with the library's suggestion.
func unknownCommand(_ context.Context, c *cli.Command) error {
	if c.NArg() == 0 {
		return cli.ShowRootCommandHelp(c)
	}
	name, suggestion := c.Args().First(), "--version"
	if name != "version" {
		suggestion = cli.SuggestCommand(c.Commands, name)
	}
	return usageError("unknown command %q; did you mean %q?", name, suggestion)
}

// completeRunIDs completes a run id (run, status, break) with those that
// status lists on the backend (--dir, else the default; --backend etcd):
// each lock's, and each of a past run that holds none, with its state
// (free). After run's RUN_ID, and for a flag, it completes as the library
// does. Only a completion reads them, never `withlock run`.
func completeRunIDs(ctx context.Context, c *cli.Command) {
	args := c.Args().Slice()
	if len(args) > 0 && (c.Name == "run" || strings.HasPrefix(args[len(args)-1], "-")) {
		cli.DefaultCompleteWithFlags(ctx, c)
		return
	}
	if !c.IsSet("etcd-dial-timeout") {
		_ = c.Set("etcd-dial-timeout", "1s") // a Tab must not hang for the default 5 s on an etcd down
	}
	st, err := backendReport(c) // metrics.go
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, l := range st.Locks {
		if id := l.RunID; id != "" && !seen[id] && !strings.ContainsAny(id, "\n:") {
			seen[id] = true
			fmt.Fprintf(c.Root().Writer, "%s:%s\n", id, l.State)
		}
	}
}

// versionString is what --version prints: the version `make build` stamps
// (git describe), else the one the go command recorded: the tag of `go
// install …@v1.2.3`, or for a build in a checkout the pseudo-version made
// from the commit (v0.0.0-20261201195150-39808a8b2b23, "+dirty" with
// changes).
func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	// Built with -buildvcs=false or outside a checkout: say so, not a bare "dev".
	return "devel (no version or commit recorded in the build)"
}

// checkRunIDs is the Before of the commands that take run ids: one longer
// than 4 KiB is a usage error (SPEC §3) on every backend and in every
// command (etcd would run it; status and break would answer for a run id
// nothing can hold). run's COMMAND after its RUN_ID may be longer.
func checkRunIDs(ctx context.Context, c *cli.Command) (context.Context, error) {
	for i, id := range c.Args().Slice() {
		if len(id) > locks.MaxRunIDLen && (i == 0 || c.Name == "status") {
			return ctx, locks.CheckRunID(id)
		}
	}
	return checkDescriptors(ctx, c)
}

// checkDescriptors is every command's Before (SPEC §3, scarce resources):
// with too few open files allowed, run and scope end with 73 and one line
// before any lock is taken or command started — never a Go runtime crash
// ("netpollinit failed" under ulimit -n 6) or a lock that cannot be
// released (ulimit -n 9) — and otherwise set aside the descriptors a
// release needs, handed back by freeReserve when it runs out. The other
// commands only check that the few descriptors they need are there, for
// the same one line instead of the runtime's abort. Parsing the command
// line opens no descriptor.
func checkDescriptors(ctx context.Context, c *cli.Command) (context.Context, error) {
	check := filelock.CheckDescriptors
	if c.Name == "run" || c.Name == "scope" {
		check = filelock.ReserveDescriptors
	}
	if err := check(); err != nil {
		return ctx, exitWith(exitCantCreate, err)
	}
	return ctx, nil
}
