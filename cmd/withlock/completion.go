package main

// Shell completion. The scripts (completion_scripts.go) are thin: on every
// TAB they run the hidden `withlock __complete -- WORDS...`, which walks the
// command line with the same cli definitions that parse it (which words are
// commands, which flags take a value, where RUN_ID and COMMAND are) and
// prints what may come next. So bash, zsh and fish complete alike, no
// script lists a flag twice or misses a new one, and run ids are read from
// the lock directory (the --dir on the line, else the default) without jq.

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
)

func init() {
	commandRegistry = append(commandRegistry, completionCommand, completeCommand)
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a completion script for the shell. It completes subcommands, their
flags and the values of those that have a fixed set, run ids from the lock
directory (for run, status and break), and after RUN_ID (or "--") the
command to run and its own arguments. The packages install the scripts;
by hand:

Examples:
   source <(withlock completion bash)
   withlock completion bash > /etc/bash_completion.d/withlock
   withlock completion zsh > "${fpath[1]}/_withlock"
   withlock completion fish > ~/.config/fish/completions/withlock.fish`,
		Action: func(_ context.Context, c *cli.Command) error {
			if c.NArg() != 1 {
				return usageError("completion: want one shell: bash, zsh or fish")
			}
			script, ok := completionScripts[c.Args().First()]
			if !ok {
				return usageError("completion: unknown shell %q: want bash, zsh or fish", c.Args().First())
			}
			fmt.Print(script)
			return nil
		},
	}
}

// completeCommand is what the scripts run. Its arguments are the words of
// the command line after "withlock", the last one the word being completed
// (empty at a fresh word), after a "--" that keeps them from being read as
// withlock's own flags.
func completeCommand() *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Usage:           "complete a withlock command line (used by the completion scripts)",
		Hidden:          true,
		SkipFlagParsing: true,
		Action: func(_ context.Context, c *cli.Command) error {
			words := c.Args().Slice()
			if len(words) > 0 && words[0] == "--" {
				words = words[1:]
			}
			complete(c.Root(), words, listRunIDs).write(os.Stdout)
			return nil
		},
	}
}

// completion is what may come next on a command line. kind tells the
// script what to do besides offering words:
//
//	words      only the words
//	commands   the words and the names of commands on PATH (COMMAND)
//	files      file names
//	dirs       directory names
//	child N    the word belongs to the command withlock runs, which starts
//	           at word N (0 = the first after "withlock"): complete it as
//	           the shell completes that command
type completion struct {
	kind  string
	child int
	words []candidate
}

type candidate struct{ word, description string }

// write prints the kind, then one candidate per line ("word\tdescription").
func (c completion) write(w io.Writer) {
	kind := c.kind
	if kind == "child" {
		kind += " " + strconv.Itoa(c.child)
	}
	fmt.Fprintln(w, kind)
	for _, cand := range c.words {
		if strings.ContainsAny(cand.word, "\n\t") {
			continue // cannot be written on one line; never offered
		}
		if d := oneLine(cand.description); d != "" {
			fmt.Fprintf(w, "%s\t%s\n", cand.word, d)
		} else {
			fmt.Fprintln(w, cand.word)
		}
	}
}

// argSlot is what a positional argument of a command is, from its ArgsUsage.
type argSlot struct {
	kind   string   // runid | command | words | files
	words  []string // for words
	repeat bool     // the slot takes every further argument too
}

// complete works out what may follow words[:len(words)-1] in place of the
// last word, which is the prefix typed so far. runIDs lists the run ids in
// a lock directory ("" for the default).
func complete(app *cli.Command, words []string, runIDs func(dir string) []candidate) completion {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, done := words[len(words)-1], words[:len(words)-1]

	// The command is the first word that is not a global flag.
	i := 0
	for i < len(done) && strings.HasPrefix(done[i], "-") {
		i++
	}
	if i == len(done) {
		if strings.HasPrefix(cur, "-") {
			return wordsCompletion(cur, flagCandidates([]cli.Flag{cli.HelpFlag, cli.VersionFlag}))
		}
		return wordsCompletion(cur, commandCandidates(app.Commands))
	}
	cmd := findCommand(app.Commands, done[i])
	if cmd == nil || cmd.Hidden {
		return completion{kind: "words"}
	}

	var positional int
	dir := ""
	for j := i + 1; j < len(done); j++ {
		w := done[j]
		if w == "--" {
			if slotAt(cmd, positional).kind == "command" {
				if j+1 == len(done) {
					return commandsCompletion(cur, nil)
				}
				return completion{kind: "child", child: j + 1}
			}
			continue
		}
		if f := completionFlag(cmd, w); f != nil {
			name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if flagTakesValue(f) && !hasValue {
				if j+1 == len(done) {
					return valueCompletion(f, cur) // cur is this flag's value
				}
				j++
				value = done[j]
			}
			if name == "dir" {
				dir = value
			}
			continue
		}
		// A subcommand (scope reset) comes before any argument.
		if positional == 0 {
			if sub := findCommand(cmd.Commands, w); sub != nil && !sub.Hidden {
				cmd = sub
				continue
			}
		}
		if slotAt(cmd, positional).kind == "command" {
			return completion{kind: "child", child: j}
		}
		positional++
	}

	slot := slotAt(cmd, positional)
	if strings.HasPrefix(cur, "-") && slot.kind != "files" {
		return wordsCompletion(cur, flagCandidates(cmd.Flags))
	}
	switch slot.kind {
	case "runid":
		return wordsCompletion(cur, runIDs(dir))
	case "command":
		var subs []candidate
		if positional == 0 {
			subs = commandCandidates(cmd.Commands)
		}
		return commandsCompletion(cur, subs)
	case "words":
		var cands []candidate
		for _, w := range slot.words {
			cands = append(cands, candidate{word: w})
		}
		return wordsCompletion(cur, cands)
	case "files":
		return completion{kind: "files"}
	}
	// No further argument: only flags (and subcommands) are left.
	return wordsCompletion(cur, append(commandCandidates(cmd.Commands), flagCandidates(cmd.Flags)...))
}

func wordsCompletion(cur string, cands []candidate) completion {
	out := completion{kind: "words"}
	for _, c := range cands {
		if strings.HasPrefix(c.word, cur) {
			out.words = append(out.words, c)
		}
	}
	return out
}

func commandsCompletion(cur string, extra []candidate) completion {
	c := wordsCompletion(cur, extra)
	c.kind = "commands"
	return c
}

// valueCompletion offers the value of flag f: the words of a fixed set
// ("kill|warn" in its usage), directories for --dir, file names for a
// flag whose value is a file or path, else nothing.
func valueCompletion(f cli.Flag, cur string) completion {
	usage, placeholder := flagUsage(f)
	for _, tok := range strings.Fields(usage) {
		tok = strings.Trim(tok, "(),;")
		if choiceList().MatchString(tok) {
			var cands []candidate
			for _, w := range strings.Split(tok, "|") {
				cands = append(cands, candidate{word: w})
			}
			return wordsCompletion(cur, cands)
		}
	}
	name := f.Names()[0]
	switch {
	case name == "dir":
		return completion{kind: "dirs"}
	case placeholder == "FILE" || placeholder == "PATH" || strings.Contains(name, "file"):
		return completion{kind: "files"}
	}
	return completion{kind: "words"}
}

// choiceList matches a placeholder listing the words a value can be
// ("text|json"); compiled on first use, not on every start.
var choiceList = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]+(\|[a-z]+)+$`) })

// slotAt is the n-th positional argument of cmd (0-based), read from its
// ArgsUsage: RUN_ID, COMMAND (the rest is the command's), a|b|c, or
// anything else (file names). "..." repeats the last one.
func slotAt(cmd *cli.Command, n int) argSlot {
	slots := argSlots(cmd.ArgsUsage)
	switch {
	case n < len(slots):
		return slots[n]
	case len(slots) > 0 && slots[len(slots)-1].repeat:
		return slots[len(slots)-1]
	}
	return argSlot{kind: "none"}
}

func argSlots(usage string) []argSlot {
	var slots []argSlot
	// "[command options]" says where the command's flags may go (run's
	// RUN_ID [command options] [--] COMMAND): not an argument.
	usage = strings.ReplaceAll(usage, "[command options]", "")
	for _, tok := range strings.Fields(usage) {
		tok = strings.Trim(tok, "[]")
		if tok == "--" || tok == "" {
			continue
		}
		repeat := strings.HasSuffix(tok, "...")
		tok = strings.TrimSuffix(tok, "...")
		s := argSlot{kind: "files", repeat: repeat}
		switch {
		case tok == "RUN_ID":
			s.kind = "runid"
		case tok == "COMMAND":
			s.kind = "command"
		case choiceList().MatchString(tok):
			s.kind, s.words = "words", strings.Split(tok, "|")
		}
		slots = append(slots, s)
		if s.kind == "command" {
			break // what follows is the command's
		}
	}
	return slots
}

// completionFlag is the flag of cmd that word spells (--wait, --wait=5s, -q).
func completionFlag(cmd *cli.Command, word string) cli.Flag {
	if !strings.HasPrefix(word, "-") || word == "-" || word == "--" {
		return nil
	}
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	if name == "help" || name == "h" {
		return cli.HelpFlag
	}
	return nil
}

func flagTakesValue(f cli.Flag) bool {
	dg, ok := f.(cli.DocGenerationFlag)
	return ok && dg.TakesValue()
}

// flagCandidates are the spellings of the visible flags, each once, with
// its usage; --help last.
func flagCandidates(flags []cli.Flag) []candidate {
	var out []candidate
	seen := map[string]bool{}
	add := func(f cli.Flag) {
		usage, _ := flagUsage(f)
		for _, n := range f.Names() {
			if w := flagWord(n); !seen[w] {
				seen[w] = true
				out = append(out, candidate{word: w, description: usage})
			}
		}
	}
	for _, f := range visibleFlags(flags) {
		add(f)
	}
	if cli.HelpFlag != nil {
		add(cli.HelpFlag)
	}
	return out
}

// commandCandidates are the visible commands with their one-line usage.
func commandCandidates(cmds []*cli.Command) []candidate {
	var out []candidate
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" {
			continue
		}
		for _, n := range c.Names() {
			out = append(out, candidate{word: n, description: c.Usage})
		}
	}
	return out
}

// listRunIDs reads the run ids of the locks in dir (else the default lock
// directory), each with its state. A directory that is missing or cannot
// be read offers none: completion never prints an error.
func listRunIDs(dir string) []candidate {
	locker, err := locks.NewRunLocker(locks.ResolveDir(dir, os.Getenv), locks.DefaultTTL)
	if err != nil {
		return nil
	}
	rep, err := locker.Inspect()
	if err != nil {
		return nil
	}
	var out []candidate
	for _, l := range rep.Locks {
		if l.Payload.RunID == "" {
			continue
		}
		desc := string(l.State)
		if l.Payload.Pid > 0 {
			desc += ", pid " + strconv.Itoa(l.Payload.Pid)
		}
		if l.Payload.Command != "" {
			desc += ": " + l.Payload.Command
		}
		out = append(out, candidate{word: l.Payload.RunID, description: desc})
	}
	return out
}

// oneLine is s with runs of white space made one space, cut to 80
// characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:77]) + "..."
	}
	return s
}
