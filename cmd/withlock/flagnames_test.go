package main

import (
	"reflect"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag of every command answers Names exactly as urfave/cli's own
// flag does, twice (the second answer comes from the cache), and stays the
// flag it wraps.
func TestCachedFlagNamesMatchUrfave(t *testing.T) {
	var walk func(path string, cmds []*cli.Command)
	checked := 0
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				inner := unwrapFlag(f)
				if inner == f {
					t.Errorf("%s %s: flag %T is not wrapped", path, c.Name, f)
					continue
				}
				want := inner.Names()
				for range 2 {
					if got := f.Names(); !reflect.DeepEqual(got, want) {
						t.Errorf("%s %s: Names() = %q, urfave says %q", path, c.Name, got, want)
					}
				}
				if f.String() != inner.String() {
					t.Errorf("%s %s: help line %q, want %q", path, c.Name, f.String(), inner.String())
				}
				checked++
			}
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	walk("withlock", newApp().Commands)
	if checked < 20 {
		t.Fatalf("checked %d flags; the walk missed the commands", checked)
	}
}

// A v1-style name ("name, alias") is cut as urfave cuts it.
func TestCachedNamesOfV1StyleFlags(t *testing.T) {
	for _, f := range []*cli.StringFlag{
		{Name: "dir, d"},
		{Name: "dir", Aliases: []string{"d x"}},
		{Name: "dir", Aliases: []string{"d"}},
		{Name: "wait"},
	} {
		got := withCachedNames(f).Names()
		if want := f.Names(); !reflect.DeepEqual(got, want) {
			t.Errorf("%q %q: %q, urfave says %q", f.Name, f.Aliases, got, want)
		}
	}
}
