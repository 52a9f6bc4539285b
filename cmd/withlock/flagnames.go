package main

import "github.com/urfave/cli/v2"

// urfave/cli v2 recomputes a flag's names with a regexp (cli.FlagNames) on
// every call of Names, and every parse looks each flag up by each of its
// names (Command.Run → runFlagActions → Context.IsSet → lookupFlag walks the
// flags calling Names): O(flags²) regexp runs, two thirds of the parse of a
// `withlock run` command line. The wrappers below keep the names after the
// first call; every other method is the wrapped flag's own, so help,
// completion and parsing see the same flag.
type (
	boolFlag struct {
		*cli.BoolFlag
		names
	}
	durationFlag struct {
		*cli.DurationFlag
		names
	}
	intFlag struct {
		*cli.IntFlag
		names
	}
	stringFlag struct {
		*cli.StringFlag
		names
	}
	stringSliceFlag struct {
		*cli.StringSliceFlag
		names
	}
)

// names memoises a flag's Names.
type names struct{ cached []string }

func (n *names) get(compute func() []string) []string {
	if n.cached == nil {
		n.cached = compute()
	}
	return n.cached
}

func (f *boolFlag) Names() []string        { return f.get(f.BoolFlag.Names) }
func (f *durationFlag) Names() []string    { return f.get(f.DurationFlag.Names) }
func (f *intFlag) Names() []string         { return f.get(f.IntFlag.Names) }
func (f *stringFlag) Names() []string      { return f.get(f.StringFlag.Names) }
func (f *stringSliceFlag) Names() []string { return f.get(f.StringSliceFlag.Names) }

// cacheFlagNames wraps the flags of cmds and of their subcommands.
func cacheFlagNames(cmds []*cli.Command) {
	for _, c := range cmds {
		for i, f := range c.Flags {
			c.Flags[i] = withCachedNames(f)
		}
		cacheFlagNames(c.Subcommands)
	}
}

func withCachedNames(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *cli.BoolFlag:
		return &boolFlag{BoolFlag: f}
	case *cli.DurationFlag:
		return &durationFlag{DurationFlag: f}
	case *cli.IntFlag:
		return &intFlag{IntFlag: f}
	case *cli.StringFlag:
		return &stringFlag{StringFlag: f}
	case *cli.StringSliceFlag:
		return &stringSliceFlag{StringSliceFlag: f}
	}
	return f
}

// unwrapFlag returns the urfave/cli flag inside a wrapper.
func unwrapFlag(f cli.Flag) cli.Flag {
	switch f := f.(type) {
	case *boolFlag:
		return f.BoolFlag
	case *durationFlag:
		return f.DurationFlag
	case *intFlag:
		return f.IntFlag
	case *stringFlag:
		return f.StringFlag
	case *stringSliceFlag:
		return f.StringSliceFlag
	}
	return f
}
