package main

import "github.com/urfave/cli/v2"

// urfave/cli v2 recomputes a flag's names with a regular expression on
// every Names() call, and finds a flag by walking every flag's Names(): one
// parse of `withlock run` (each flag looked up, each lookup a walk) ran
// that expression some 500 times. The wrappers below answer Names() from
// the names computed once; every other method is the flag's own.

type (
	boolFlag struct {
		*cli.BoolFlag
		names []string
	}
	stringFlag struct {
		*cli.StringFlag
		names []string
	}
	intFlag struct {
		*cli.IntFlag
		names []string
	}
	genericFlag struct {
		*cli.GenericFlag
		names []string
	}
	stringSliceFlag struct {
		*cli.StringSliceFlag
		names []string
	}
)

func (f boolFlag) Names() []string        { return f.names }
func (f stringFlag) Names() []string      { return f.names }
func (f intFlag) Names() []string         { return f.names }
func (f genericFlag) Names() []string     { return f.names }
func (f stringSliceFlag) Names() []string { return f.names }

// withCachedNames returns flags with each flag of a known type wrapped.
func withCachedNames(flags []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		switch f := f.(type) {
		case *cli.BoolFlag:
			out[i] = boolFlag{f, f.Names()}
		case *cli.StringFlag:
			out[i] = stringFlag{f, f.Names()}
		case *cli.IntFlag:
			out[i] = intFlag{f, f.Names()}
		case *cli.GenericFlag:
			out[i] = genericFlag{f, f.Names()}
		case *cli.StringSliceFlag:
			out[i] = stringSliceFlag{f, f.Names()}
		default:
			out[i] = f
		}
	}
	return out
}

// isBoolFlag reports whether f is a boolean flag, wrapped or not.
func isBoolFlag(f cli.Flag) bool {
	switch f.(type) {
	case *cli.BoolFlag, boolFlag:
		return true
	}
	return false
}
