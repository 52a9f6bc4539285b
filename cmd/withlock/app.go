package main

import (
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

var version = "" // set with -ldflags "-X main.version=..."; else from build info

func newApp() *cli.App {
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
			return usageError("%v", err)
		},
	}
	app.Commands = append(app.Commands, extraCommands()...)
	// urfave/cli gives every command a "help" subcommand aliased "h", which
	// would swallow `withlock run h -- cmd` (run id "h"); --help stays.
	for _, c := range app.Commands {
		hideHelpCommands(c)
	}
	return app
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

// reorderArgs lets flags follow positional arguments, as in
// `withlock run r-42 --wait 30s -- resume-run r-42`: urfave/cli v2 stops
// at the first positional argument, so for each subcommand the flags found
// before "--" are moved in front of the positional ones. What follows "--"
// is the child's and is never touched.
func reorderArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	rest := args[1:]
	// Global flags come first; the subcommand is the first non-flag word.
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i], "-") && rest[i] != "--" {
		i++
	}
	if i >= len(rest) {
		return args
	}
	out = append(out, rest[:i+1]...)
	cmd := findCommand(app.Commands, rest[i])
	rest = rest[i+1:]
	for cmd != nil && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		// nested subcommand such as `scope reset`
		sub := findCommand(cmd.Subcommands, rest[0])
		if sub == nil {
			break
		}
		out = append(out, rest[0])
		cmd, rest = sub, rest[1:]
	}
	if cmd == nil {
		return append(out, rest...)
	}
	var flags, positional []string
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if !strings.Contains(a, "=") && takesValue(cmd, a) && j+1 < len(rest) {
			j++
			flags = append(flags, rest[j])
		}
	}
	out = append(out, flags...)
	return append(out, positional...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// takesValue reports whether the flag spelled arg consumes the next word.
func takesValue(cmd *cli.Command, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	for _, f := range cmd.Flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, isBool := f.(*cli.BoolFlag); isBool {
				return false
			}
			return true
		}
	}
	return false
}

func hideHelpCommands(c *cli.Command) {
	c.HideHelpCommand = true
	for _, sub := range c.Subcommands {
		hideHelpCommands(sub)
	}
}
