package main

import (
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

var version = "" // set with -ldflags "-X main.version=..."; else from build info

func newApp() *cli.App { return newAppFor(nil) }

// newAppFor is the app for the command line args: for `withlock run …`,
// the most frequent one by far, only the run command is built (the others'
// flags, and the help that lists them, are not needed to parse or run it).
func newAppFor(args []string) *cli.App {
	app := &cli.App{
		Name:                   "withlock",
		Usage:                  "take a lock, run a command under supervision, always clean up",
		Version:                versionString(),
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		// Left zero, urfave/cli sets this to the mtime of os.Args[0], a
		// stat(2) on every start for a field no help template shows.
		Compiled: time.Unix(0, 0),
		Commands: []*cli.Command{
			runCommand(),
		},
		// Only main exits: keep urfave/cli from calling os.Exit.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return flagUsageError("", err)
		},
	}
	if len(args) < 2 || args[1] != "run" {
		app.Commands = append(app.Commands, extraCommands()...)
	}
	for _, c := range app.Commands {
		setupCommand(c, c.Name)
	}
	return app
}

// setupCommand applies what every command shares. urfave/cli gives every
// command a "help" subcommand aliased "h", which would swallow `withlock
// run h -- cmd` (run id "h"): `withlock help run` is handled by reorderArgs
// and --help stays. A usage error is one line, never the whole help.
func setupCommand(c *cli.Command, path string) {
	c.HideHelpCommand = true
	c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return flagUsageError(path, err) }
	for _, sub := range c.Subcommands {
		setupCommand(sub, path+" "+sub.Name)
	}
}

// flagUsageError is the one line for an error out of urfave/cli's flag
// parsing in command path ("" at the top level): the flag package's
// wording, `invalid value "x" for flag -timeout: …`, becomes `--timeout:
// …`. (Unknown flags of a command are caught earlier, by reorderArgs.)
func flagUsageError(path string, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if _, after, ok := strings.Cut(rest, " for flag -"); ok {
			if name, cause, ok := strings.Cut(after, ": "); ok {
				msg = "--" + name + " " + cause
			}
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		msg = "--" + name + ": missing value"
	} else if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag -" + name + " (see withlock --help)"
	}
	if path != "" {
		msg = path + ": " + msg
	}
	return usageError("%s", msg)
}

// extraCommands is where other subcommands (scope, status, break, gc)
// register; each lives in its own file.
func extraCommands() []*cli.Command {
	var cmds []*cli.Command
	for _, f := range commandRegistry {
		cmds = append(cmds, f())
	}
	return cmds
}

// commandRegistry is appended to by the init of each subcommand's file.
var commandRegistry []func() *cli.Command

// versionString is what --version prints: the version `make build` stamps
// (git describe), else what the go command recorded (versionFromBuildInfo).
func versionString() string {
	if version != "" {
		return version
	}
	bi, _ := debug.ReadBuildInfo()
	return versionFromBuildInfo(bi)
}

func init() { cli.FlagStringer = flagHelp }

// flagHelp is a flag's line in the help: its names and placeholder, its
// usage, the default when there is one worth showing (not for a boolean,
// not an empty or zero one) and its environment variables. Unlike
// urfave/cli's own it names a repeatable flag once ("(repeatable)" is in
// its usage).
func flagHelp(f cli.Flag) string {
	df, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return ""
	}
	usage := df.GetUsage()
	placeholder := ""
	if start := strings.IndexByte(usage, '`'); start >= 0 {
		if end := strings.IndexByte(usage[start+1:], '`'); end >= 0 {
			placeholder = usage[start+1 : start+1+end]
			usage = usage[:start] + placeholder + usage[start+2+end:]
		}
	}
	if df.TakesValue() && placeholder == "" {
		placeholder = "value"
	}
	var names []string
	for _, n := range df.Names() {
		names = append(names, dashed(n))
	}
	line := strings.Join(names, ", ")
	if df.TakesValue() {
		line += " " + placeholder
	}
	line += "\t" + usage
	if _, isBool := f.(*cli.BoolFlag); !isBool && df.TakesValue() {
		if d := df.GetDefaultText(); d != "" && d != `""` && !strings.Contains(usage, "(default") {
			line += " (default: " + d + ")"
		}
	}
	if env := df.GetEnvVars(); len(env) > 0 {
		line += " [$" + strings.Join(env, ", $") + "]"
	}
	return line
}
