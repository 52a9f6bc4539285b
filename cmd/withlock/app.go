package main

import (
	"context"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"
)

var version = "" // set with -ldflags "-X main.version=..."; else from build info

func newApp() *cli.Command { return newAppFor(nil) }

// newAppFor is the app for the command line args: for `withlock run …`,
// the most frequent one by far, only the run command is built (the others'
// flags, and the help that lists them, are not needed to parse or run it).
func newAppFor(args []string) *cli.Command {
	app := &cli.Command{
		Name:                   "withlock",
		Usage:                  "take a lock, run a command under supervision, always clean up",
		Version:                versionString(),
		HideHelpCommand:        true,
		UseShortOptionHandling: true,
		Commands: []*cli.Command{
			runCommand(),
		},
		// Only main exits: keep urfave/cli from calling os.Exit.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		OnUsageError: func(_ context.Context, c *cli.Command, err error, _ bool) error {
			return flagUsageError(c, "", err)
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
// and --help stays. A usage error is one line, never the whole help. A
// duration flag read from the environment names its command when the
// variable does not parse (envDurationFlag).
func setupCommand(c *cli.Command, path string) {
	c.HideHelpCommand = true
	c.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error { return flagUsageError(c, path, err) }
	for _, f := range c.Flags {
		if e, ok := f.(*envDurationFlag); ok {
			e.path = path
		}
	}
	for _, sub := range c.Commands {
		setupCommand(sub, path+" "+sub.Name)
	}
}

// flagUsageError is the one line for an error out of urfave/cli's flag
// parsing in command c at path ("" at the top level), in the words
// withlock has always used (those of urfave/cli v2, whose parser was Go's
// flag package): `invalid value "x" for flag -timeout: …` becomes
// `--timeout …`, with a number that does not parse "parse error" or "value
// out of range", and a boolean's `invalid boolean value "x" for -quiet:
// parse error` stays as the flag package put it. (Unknown flags of a
// command are caught earlier, by reorderArgs.)
func flagUsageError(c *cli.Command, path string, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if value, qerr := strconv.QuotedPrefix(rest); qerr == nil {
			if after, ok := strings.CutPrefix(rest[len(value):], " for flag -"); ok {
				if name, cause, ok := strings.Cut(after, ": "); ok {
					msg = "--" + name + " " + flagPackageCause(cause)
					if _, isBool := flagNamed(c, name).(*cli.BoolFlag); isBool {
						msg = "invalid boolean value " + value + " for -" + name + ": " + cause
					}
				}
			}
		}
	} else if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		msg = "--" + strings.TrimLeft(name, "-") + ": missing value"
	} else if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag -" + name + " (see withlock --help)"
	}
	if path != "" {
		msg = path + ": " + msg
	}
	return usageError("%s", msg)
}

// flagPackageCause is the cause of a bad flag value as Go's flag package
// words it: urfave/cli v3 passes strconv's error on
// (`strconv.ParseInt: parsing "x": invalid syntax`), the flag package said
// "parse error" or "value out of range".
func flagPackageCause(cause string) string {
	if !strings.HasPrefix(cause, "strconv.") {
		return cause
	}
	switch {
	case strings.HasSuffix(cause, ": "+strconv.ErrSyntax.Error()):
		return "parse error"
	case strings.HasSuffix(cause, ": "+strconv.ErrRange.Error()):
		return "value out of range"
	}
	return cause
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
	for _, n := range f.Names() {
		names = append(names, dashed(n))
	}
	line := strings.Join(names, ", ")
	if df.TakesValue() {
		line += " " + placeholder
	}
	line += "\t" + usage
	if _, isBool := f.(*cli.BoolFlag); !isBool && df.TakesValue() {
		if d := defaultText(df); d != "" && d != `""` && !strings.Contains(usage, "(default") {
			line += " (default: " + d + ")"
		}
	}
	if env := df.GetEnvVars(); len(env) > 0 {
		line += " [$" + strings.Join(env, ", $") + "]"
	}
	return line
}

// defaultText is a flag's default as its help states it: its DefaultText,
// else the text of its value ("file" quoted, 75) — not for a duration flag,
// whose value is the one the command line set (urfave/cli v3 parses into
// the Value of a GenericFlag itself): its DefaultText is all there is.
func defaultText(f cli.DocGenerationFlag) string {
	if d := f.GetDefaultText(); d != "" {
		return d
	}
	switch f.(type) {
	case *cli.GenericFlag, *envDurationFlag:
		return ""
	}
	return f.GetValue()
}
