package main

// withlock(1) is generated from the cli definitions, so every command and
// flag the binary accepts is in the page with the usage text its --help
// shows; the sections that are prose (exit status, environment, files,
// examples) are roff written by hand in manpage.go. The generator is plain
// text formatting, not urfave/cli's docs support (blackfriday and
// go-md2man in v2, whose markdown-to-roff step lost text: ‹…> and *…* in
// the old page; a module of its own in v3), so it is in every build,
// the release build included: `make man` runs the binary it installs.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"
)

func init() { commandRegistry = append(commandRegistry, genManCommand) }

// genManCommand prints the man page; `make man` runs it. Hidden: it is a
// build step, not something a user calls.
func genManCommand() *cli.Command {
	return &cli.Command{
		Name:   "gen-man",
		Usage:  "print the withlock(1) man page (roff)",
		Hidden: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "date", Usage: "date for the page footer (the Makefile passes the commit's)"},
		},
		Action: func(_ context.Context, c *cli.Command) error {
			fmt.Print(manPage(c.Root(), c.String("date")))
			return nil
		},
	}
}

// manPage renders withlock(1) for app.
func manPage(app *cli.Command, date string) string {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH WITHLOCK 1 %s %s \"User Commands\"\n", roffQuote(date), roffQuote("withlock "+app.Version))
	b.WriteString(".SH NAME\nwithlock \\- " + roffText(app.Usage) + "\n")

	b.WriteString(".SH SYNOPSIS\n")
	for _, cmd := range manCommands(app.Commands, "") {
		fmt.Fprintf(&b, ".B withlock %s\n", roffText(cmd.path))
		if len(pageFlags(cmd.Flags)) > 0 {
			b.WriteString("[\\fIflags\\fR]\n")
		}
		if cmd.ArgsUsage != "" {
			b.WriteString(synopsisArgs(cmd.ArgsUsage) + "\n")
		}
		b.WriteString(".br\n")
	}
	b.WriteString(".B withlock\n[\\fB\\-\\-help\\fR] [\\fB\\-\\-version\\fR]\n")

	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(manDescription)
	b.WriteString(".SS Commands\n")
	for _, cmd := range manCommands(app.Commands, "") {
		fmt.Fprintf(&b, ".TP\n.B withlock %s\n%s\n", roffText(cmd.path), roffText(sentence(cmd.Usage)))
		if d := strings.TrimSpace(cmd.Description); d != "" {
			b.WriteString(roffParagraphs(d, true))
		}
	}

	b.WriteString(".SH OPTIONS\n")
	b.WriteString(".SS \"Every command\"\n")
	for _, f := range []cli.Flag{cli.HelpFlag, cli.VersionFlag} {
		if f != nil {
			b.WriteString(manFlag(f))
		}
	}
	for _, cmd := range manCommands(app.Commands, "") {
		flags := pageFlags(cmd.Flags)
		if len(flags) == 0 {
			continue
		}
		fmt.Fprintf(&b, ".SS \"withlock %s\"\n", cmd.path)
		for _, f := range flags {
			b.WriteString(manFlag(f))
		}
	}

	b.WriteString(manExitStatus)
	b.WriteString(".SH ENVIRONMENT\n")
	b.WriteString(manEnvironment)
	if extra := flagEnvironment(app.Commands); extra != "" {
		b.WriteString(".SS \"Flags set from the environment\"\n")
		b.WriteString(extra)
	}
	b.WriteString(manChildEnvironment)
	b.WriteString(manFiles)
	b.WriteString(manExamples)
	b.WriteString(manSeeAlso)
	return b.String()
}

// manCommand is a visible command with its path from the top ("scope reset").
type manCommand struct {
	*cli.Command
	path string
}

// manCommands lists the visible commands and subcommands in the order
// `withlock --help` shows them, each followed by its subcommands.
func manCommands(cmds []*cli.Command, prefix string) []manCommand {
	var out []manCommand
	for _, c := range cmds {
		if c.Hidden || c.Name == "help" {
			continue
		}
		path := strings.TrimSpace(prefix + " " + c.Name)
		out = append(out, manCommand{c, path})
		out = append(out, manCommands(c.Commands, path)...)
	}
	return out
}

// visibleFlags are the flags a command's --help lists (not the hidden ones).
func visibleFlags(flags []cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, f := range flags {
		if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
			continue
		}
		out = append(out, f)
	}
	return out
}

// pageFlags are the flags the page lists for a command: the visible ones
// less --help, which urfave/cli adds to every command's Flags when the app
// runs; the page lists it once, under "Every command".
func pageFlags(flags []cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, f := range visibleFlags(flags) {
		if cli.HelpFlag == nil || f.Names()[0] != cli.HelpFlag.Names()[0] {
			out = append(out, f)
		}
	}
	return out
}

// manFlag is one flag as a .TP entry: its spellings, the placeholder of its
// value, the usage text, its default (when it has one worth saying) and
// the environment variables that set it.
func manFlag(f cli.Flag) string {
	var b strings.Builder
	var spellings []string
	for _, n := range f.Names() {
		spellings = append(spellings, `\fB`+roffText(flagWord(n))+`\fR`)
	}
	usage, placeholder := flagUsage(f)
	b.WriteString(".TP\n" + strings.Join(spellings, ", "))
	if placeholder != "" {
		b.WriteString(` \fI` + roffText(placeholder) + `\fR`)
	}
	b.WriteString("\n" + roffText(usage))
	if d := flagDefault(f); d != "" {
		b.WriteString(" (default: " + roffText(d) + ")")
	}
	b.WriteString("\n")
	if env := flagEnvVars(f); len(env) > 0 {
		b.WriteString(".br\nEnvironment: " + roffText("$"+strings.Join(env, ", $")) + "\n")
	}
	return b.String()
}

// flagWord is how a flag name is typed: -q, --quiet.
func flagWord(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagUsage is the usage text and the name of the value a flag takes: the
// word in backquotes, as urfave/cli's help shows it, else one from its type.
func flagUsage(f cli.Flag) (usage, placeholder string) {
	dg, ok := f.(cli.DocGenerationFlag)
	if !ok {
		return "", ""
	}
	placeholder, usage = unquoteUsage(dg.GetUsage())
	if !dg.TakesValue() {
		return usage, ""
	}
	if strings.ContainsAny(placeholder, " ") {
		placeholder = "" // `etcdctl lock`: quoted code, not the value's name
	}
	if placeholder == "" {
		placeholder = valueName(dg)
	}
	return usage, placeholder
}

// valueName names the value of a flag whose usage does not: DUR when its
// default reads as a duration, N when as a number, else VALUE. It goes by
// the default's text rather than the flag's Go type, which a wrapper (or a
// flag type of our own) would hide.
func valueName(f cli.DocGenerationFlag) string {
	v := strings.Trim(f.GetValue(), `"`)
	if _, err := strconv.Atoi(v); err == nil {
		return "N"
	}
	if _, err := time.ParseDuration(v); err == nil {
		return "DUR"
	}
	return "VALUE"
}

// flagDefault is the default the page states: none for a switch, an empty
// string or a zero, which are "not set" rather than a value.
func flagDefault(f cli.Flag) string {
	dg, ok := f.(cli.DocGenerationFlag)
	if !ok || !dg.TakesValue() {
		return ""
	}
	d := strings.Trim(defaultText(dg), `"`)
	switch d {
	case "", "0", "0s", "[]":
		return ""
	}
	return d
}

func flagEnvVars(f cli.Flag) []string {
	if dg, ok := f.(cli.DocGenerationFlag); ok {
		return dg.GetEnvVars()
	}
	return nil
}

// flagEnvironment lists the environment variables that set flags, other
// than those manEnvironment describes, with the flags they set.
func flagEnvironment(cmds []*cli.Command) string {
	seen := map[string]bool{}
	for _, name := range regexp.MustCompile(`(?m)^\.B ([A-Z0-9_]+)$`).FindAllStringSubmatch(manEnvironment, -1) {
		seen[name[1]] = true
	}
	var b strings.Builder
	for _, cmd := range manCommands(cmds, "") {
		for _, f := range pageFlags(cmd.Flags) {
			for _, env := range flagEnvVars(f) {
				if seen[env] {
					continue
				}
				seen[env] = true
				usage, _ := flagUsage(f)
				fmt.Fprintf(&b, ".TP\n.B %s\n\\fB%s\\fR: %s\n", roffText(env), roffText(flagWord(f.Names()[0])), roffText(usage))
			}
		}
	}
	return b.String()
}

// synopsisArgs sets a command's ArgsUsage ("RUN_ID [--] COMMAND [ARGS...]")
// in the synopsis style: placeholders in italics, literal words and "--"
// in bold, brackets and ellipses plain.
func synopsisArgs(s string) string {
	return synopsisWord().ReplaceAllStringFunc(s, func(w string) string {
		switch {
		case w == "--" || w == "-":
			return `\fB` + roffText(w) + `\fR`
		case strings.ToUpper(w) == w && strings.ContainsAny(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
			return `\fI` + roffText(w) + `\fR`
		case w[0] >= 'a' && w[0] <= 'z':
			return `\fB` + roffText(w) + `\fR`
		}
		return roffText(w)
	})
}

// synopsisWord splits a synopsis into flags, words and the rest; compiled
// on first use, not on every start.
var synopsisWord = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`--?|[A-Za-z_][A-Za-z0-9_-]*|[^A-Za-z_-]+`)
})

// roffParagraphs sets help text written for a terminal: blank lines part
// paragraphs, indented lines (examples) are kept as they are, the rest is
// filled. Inside a .TP entry (indented) the paragraphs use .IP.
func roffParagraphs(text string, indented bool) string {
	para, blockStart, blockEnd := ".PP\n", ".RS 4\n.nf\n", ".fi\n.RE\n"
	if indented {
		// .RS counts from the section's margin, not from the .TP text:
		// the outer .RS (by the prevailing indent) gets to the text first.
		para, blockStart, blockEnd = ".IP\n", ".RS\n.RS 4\n.nf\n", ".fi\n.RE\n.RE\n"
	}
	var b strings.Builder
	for _, p := range strings.Split(text, "\n\n") {
		lines := strings.Split(strings.Trim(p, "\n"), "\n")
		b.WriteString(para)
		inBlock := false
		for _, line := range lines {
			literal := strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")
			switch {
			case literal && !inBlock:
				b.WriteString(blockStart)
				inBlock = true
			case !literal && inBlock:
				b.WriteString(blockEnd)
				inBlock = false
			}
			if literal {
				line = strings.TrimPrefix(strings.TrimLeft(line, "\t"), "   ")
			}
			b.WriteString(roffLine(line) + "\n")
		}
		if inBlock {
			b.WriteString(blockEnd)
		}
	}
	return b.String()
}

// roffLine is one line of text that must not be read as a request.
func roffLine(s string) string {
	s = roffText(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// roffText escapes s for roff: the escape character, hyphens as the minus
// a shell wants (--wait, not a typographic hyphen), and every non-ASCII
// character as a groff \[uXXXX] escape, so the source is plain ASCII and
// renders the same with or without preconv.
func roffText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r == '\n':
			b.WriteString(" ")
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffQuote is s as one quoted macro argument.
func roffQuote(s string) string {
	return `"` + strings.ReplaceAll(roffText(s), `"`, `\(dq`) + `"`
}

// sentence is a one-line usage as the start of a paragraph: capitalised,
// with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// unquoteUsage splits the `NAME` of a flag's value out of its usage, as
// urfave/cli's help does (its own function is unexported).
func unquoteUsage(usage string) (name, rest string) {
	before, after, ok := strings.Cut(usage, "`")
	if !ok {
		return "", usage
	}
	name, after, ok = strings.Cut(after, "`")
	if !ok {
		return "", usage
	}
	return name, before + name + after
}
