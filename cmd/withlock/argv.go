package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"
)

// The command line (SPEC §1) follows flock(1), timeout(1) and env(1):
//
//	withlock [--help|--version] COMMAND [SUBCOMMAND] [flags and arguments]
//
// For `run`, withlock's flags come before RUN_ID or between RUN_ID and the
// command to run; `--` is optional, and the first word after RUN_ID that is
// not a withlock flag starts the command, whose arguments are never read as
// withlock's (`withlock run job ls -la` runs `ls -la`). `scope` has no
// RUN_ID: its first word that is not a flag starts the command. The other
// commands (status, break, gc, scope status, scope reset, completion) take
// their flags anywhere before a `--`. A word that looks like a flag but is
// none of the command's, before the command to run, is a usage error with a
// suggestion.
//
// reorderArgs checks the command line against those rules and rewrites it
// into a form that urfave/cli parses without reading any argument as a flag:
//
//	withlock run [flags] -- RUN_ID -- COMMAND [ARGS...]
//	withlock scope [flags] -- -- COMMAND [ARGS...]
//	withlock status [flags] [-- RUN_ID...]
//
// All flags come first and a `--` ends them, because urfave/cli v3 reads
// flags anywhere among the arguments (`withlock run ID -- cmd -x` must
// never hand -x to it), drops a later `--`, and takes an argument that is a
// flag after white space (" -x") for that flag; after the first `--` it
// reads every word as an argument, as is. The `--` before COMMAND is
// always there, so that urfave/cli never takes the command's first word for
// a subcommand (`withlock scope --allow … -- status` runs a program called
// status); splitRunArgs and scope's action remove it.

// childCommands are the commands that run a command, with how many
// positional words they take before it.
var childCommands = map[string]int{"run": 1, "scope": 0}

// reorderArgs returns args in the form urfave/cli parses, or a usage error:
// an unknown command or subcommand, or an unknown flag.
func reorderArgs(app *cli.Command, args []string) ([]string, error) {
	if len(args) < 2 {
		return args, nil
	}
	out := []string{args[0]}
	rest := args[1:]
	// Global flags (--help, --version) come first; the command is the
	// first word that is not a flag.
	i := 0
	for i < len(rest) && isFlagWord(rest[i]) {
		if _, err := lookupFlag(&cli.Command{Flags: app.Flags, HideHelp: true}, "", rest[i]); err != nil {
			return nil, err
		}
		i++
	}
	if i >= len(rest) || rest[i] == "--" {
		return args, nil
	}
	out = append(out, rest[:i]...)
	if rest[i] == "help" {
		return helpArgs(app, out, rest[i+1:])
	}
	cmd := findCommand(app.Commands, rest[i])
	if cmd == nil {
		return nil, unknownCommand(app.Commands, "", rest[i])
	}
	out = append(out, rest[i])
	path := rest[i]
	rest = rest[i+1:]
	nested := false
	// A subcommand (`scope reset`) comes right after its command.
	for len(rest) > 0 {
		sub := findCommand(cmd.Commands, rest[0])
		if sub == nil {
			break
		}
		out = append(out, rest[0])
		path += " " + rest[0]
		cmd, rest, nested = sub, rest[1:], true
	}
	if need, ok := childCommands[cmd.Name]; ok && !nested {
		flags, positional, command, err := splitChildArgs(cmd, path, rest, need)
		if err != nil {
			return nil, err
		}
		out = append(out, flags...)
		for _, f := range flags {
			if f == "--help" || f == "-h" || f == "-help" {
				return out, nil // the help only: urfave/cli would take a word after it for a help topic
			}
		}
		out = append(out, "--")
		out = append(out, positional...)
		out = append(out, "--")
		return append(out, command...), nil
	}
	var flags, positional []string
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			positional = append(positional, rest[j:]...)
			break
		}
		if !isFlagWord(a) {
			positional = append(positional, a)
			continue
		}
		f, err := lookupFlag(cmd, path, a)
		if err != nil {
			return nil, err
		}
		flags = append(flags, a)
		if takesValue(f, a) {
			if j+1 == len(rest) {
				return nil, missingValue(path, a)
			}
			j++
			flags = append(flags, rest[j])
		}
	}
	out = append(out, flags...)
	if len(positional) > 0 && positional[0] != "--" {
		out = append(out, "--")
	}
	return append(out, positional...), nil
}

// splitChildArgs takes apart the words after `run` or `scope`: withlock's
// flags (with their values), the need positional words (RUN_ID), and the
// command to run. A `--` ends withlock's flags: before RUN_ID, the word
// after it is RUN_ID (and a second `--` may follow it); after RUN_ID the
// command follows it.
func splitChildArgs(cmd *cli.Command, path string, args []string, need int) (flags, positional, command []string, err error) {
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case a == "--":
			rest := args[j+1:]
			for len(positional) < need && len(rest) > 0 {
				positional, rest = append(positional, rest[0]), rest[1:]
				if len(positional) == need && len(rest) > 0 && rest[0] == "--" {
					rest = rest[1:]
				}
			}
			return flags, positional, rest, nil
		case !isFlagWord(a):
			if len(positional) < need {
				positional = append(positional, a)
				continue
			}
			return flags, positional, args[j:], nil
		}
		f, err := lookupFlag(cmd, path, a)
		if err != nil {
			return nil, nil, nil, err
		}
		flags = append(flags, a)
		if takesValue(f, a) {
			if j+1 == len(args) {
				return nil, nil, nil, missingValue(path, a)
			}
			j++
			flags = append(flags, args[j])
		}
	}
	return flags, positional, nil, nil
}

// missingValue is the usage error for a flag that needs a value, last on
// the command line.
func missingValue(path, arg string) error {
	return usageError("%s: --%s: missing value", path, strings.TrimLeft(arg, "-"))
}

// helpArgs turns `withlock help [COMMAND [SUBCOMMAND]]` into `withlock
// [COMMAND [SUBCOMMAND]] --help`.
func helpArgs(app *cli.Command, out, words []string) ([]string, error) {
	cmds, path := app.Commands, ""
	for _, w := range words {
		cmd := findCommand(cmds, w)
		if cmd == nil {
			return nil, unknownCommand(cmds, path, w)
		}
		out = append(out, w)
		cmds, path = cmd.Commands, strings.TrimSpace(path+" "+w)
	}
	return append(out, "--help"), nil
}

// isFlagWord reports whether a looks like a flag: "-" alone is an argument
// and "--" ends the flags.
func isFlagWord(a string) bool { return len(a) > 1 && a[0] == '-' && a != "--" }

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// lookupFlag finds the flag of cmd spelled arg (`--wait`, `-wait`,
// `--wait=5`, `-q`); a cluster of one-letter boolean flags (`-qn`) is
// returned as its first. An unknown flag is a usage error with a suggestion;
// path names the command in it ("scope reset"; "" for the top level).
func lookupFlag(cmd *cli.Command, path, arg string) (cli.Flag, error) {
	name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
	if f := flagNamed(cmd, name); f != nil {
		if hasValue && value == "" && !takesValue(f, "") {
			// urfave/cli v3 reads `--quiet=` as --quiet; withlock has
			// always refused it, in the words of Go's flag package.
			msg := fmt.Sprintf(`invalid boolean value "" for -%s: parse error`, name)
			if path != "" {
				msg = path + ": " + msg
			}
			return nil, usageError("%s", msg)
		}
		return f, nil
	}
	if !strings.HasPrefix(arg, "--") && !strings.Contains(arg, "=") && len(name) > 1 {
		var first cli.Flag
		for _, r := range name {
			f := flagNamed(cmd, string(r))
			if f == nil || takesValue(f, "") {
				first = nil
				break
			}
			if first == nil {
				first = f
			}
		}
		if first != nil {
			return first, nil
		}
	}
	spelled, _, _ := strings.Cut(arg, "=")
	msg := "unknown flag " + spelled
	if s := suggest(name, visibleFlagNames(cmd)); s != "" {
		msg += "; did you mean " + dashed(s) + "?"
	} else {
		msg += fmt.Sprintf(" (see %s --help)", strings.TrimSpace("withlock "+path))
	}
	if path != "" {
		msg = path + ": " + msg
	}
	return nil, usageError("%s", msg)
}

func flagNamed(cmd *cli.Command, name string) cli.Flag {
	for _, f := range commandFlags(cmd) {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// takesValue reports whether flag f, spelled arg, consumes the next word.
func takesValue(f cli.Flag, arg string) bool {
	if strings.Contains(arg, "=") {
		return false
	}
	if df, ok := f.(cli.DocGenerationFlag); ok {
		return df.TakesValue()
	}
	return false
}

func visibleFlagNames(cmd *cli.Command) []string {
	var names []string
	for _, f := range commandFlags(cmd) {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		names = append(names, f.Names()...)
	}
	return names
}

// commandFlags are cmd's flags and --help; for the top level (HideHelp
// set by reorderArgs) --help and --version, which urfave/cli adds itself.
func commandFlags(cmd *cli.Command) []cli.Flag {
	flags := append(cmd.Flags[:len(cmd.Flags):len(cmd.Flags)], cli.HelpFlag)
	if cmd.HideHelp {
		flags = append(flags, cli.VersionFlag)
	}
	return flags
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// unknownCommand is the usage error for a word that names no command
// (under parent, "" for the top level).
func unknownCommand(cmds []*cli.Command, parent, word string) error {
	where := "withlock"
	if parent != "" {
		where += " " + parent
	}
	msg := fmt.Sprintf("unknown command %q", word)
	if parent != "" {
		msg = fmt.Sprintf("unknown command %q", parent+" "+word)
	}
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Names()...)
		}
	}
	switch s := suggest(word, names); {
	case parent == "" && (word == "version" || word == "-version"):
		msg += `; did you mean "--version"?`
	case s != "":
		msg += fmt.Sprintf("; did you mean %q?", strings.TrimSpace(parent+" "+s))
	default:
		msg += fmt.Sprintf(" (see %s --help)", where)
	}
	return usageError("%s", msg)
}

// suggest returns the candidate closest to word, or "" when none is close:
// one that word begins (--older for --older-than), else the nearest by edit
// distance with adjacent transpositions, at most 1 for a word of up to four
// letters and 2 for a longer one, which catches a doubled, missing or
// swapped letter (runn, stauts, --wiat) and not an unrelated word.
func suggest(word string, candidates []string) string {
	if len(word) < 2 {
		return ""
	}
	limit := 1
	if len(word) > 4 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			return c
		}
		if d := editDistance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and swaps of two adjacent bytes
// that turn a into b.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
