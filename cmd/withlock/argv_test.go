package main

import (
	"slices"
	"strings"
	"testing"
)

// The command line rules of SPEC §1, as reorderArgs rewrites them for
// urfave/cli: withlock's flags before RUN_ID or between RUN_ID and the
// command, `--` optional, the command's words never withlock's; every flag
// first and a `--` after them, so that urfave/cli reads none of the
// arguments as a flag.
func TestReorderArgs(t *testing.T) {
	app := newApp()
	cases := []struct {
		in   string
		want string
	}{
		// run: flags before RUN_ID, between RUN_ID and COMMAND, with or without --
		{"run r-42 --wait 30s -- resume-run r-42 --wait x", "run --wait 30s -- r-42 -- resume-run r-42 --wait x"},
		{"run -q job --conflict-exit-code=0 -- true", "run -q --conflict-exit-code=0 -- job -- true"},
		{"run --dir /d job -- sh -c 'exit 3'", "run --dir /d -- job -- sh -c 'exit 3'"},
		{"run x grep -q root /etc/passwd", "run -- x -- grep -q root /etc/passwd"},
		{"run x ls -la", "run -- x -- ls -la"},
		{"run x echo files --dir /tmp/x", "run -- x -- echo files --dir /tmp/x"},
		{"run --timeout 5 x --grace 2.5 sleep 1", "run --timeout 5 --grace 2.5 -- x -- sleep 1"},
		{"run -wait 5 x true", "run -wait 5 -- x -- true"},
		{"run x -- -- odd", "run -- x -- -- odd"},
		{"run -- x -- true", "run -- x -- true"},
		{"run -- x true", "run -- x -- true"},
		{"run --conflict-exit-code -1 x true", "run --conflict-exit-code -1 -- x -- true"},
		{"run x - y", "run -- x -- - y"},
		{"run x", "run -- x --"},
		{"run", "run -- --"},
		{"run --help", "run --help"},
		{"run x -h", "run -h"},
		{"run x ls --help", "run -- x -- ls --help"},
		// scope: the first word that is not a flag starts COMMAND, even one
		// named like a subcommand
		{"scope --allow /a:write make -j4", "scope --allow /a:write -- -- make -j4"},
		{"scope --allow /a:write -- status", "scope --allow /a:write -- -- status"},
		{"scope --allow=/a:write reset -x", "scope --allow=/a:write -- -- reset -x"},
		// subcommands come right after their command
		{"scope reset --scope-file f", "scope reset --scope-file f"},
		{"scope status --json", "scope status --json"},
		// other commands: flags anywhere before --
		{"status job --json", "status --json -- job"},
		{"gc -qn", "gc -qn"},
		{"gc --older-than 7d --dry-run", "gc --older-than 7d --dry-run"},
		{"break r-42 --signal --grace 30s", "break --signal --grace 30s -- r-42"},
		{"status x -- y", "status -- x -- y"},
		{"status -- -x", "status -- -x"},
		{"status ' -x'", "status -- ' -x'"},
		{"completion bash", "completion -- bash"},
		// help
		{"help", "--help"},
		{"help run", "run --help"},
		{"help scope reset", "scope reset --help"},
		// global flags
		{"--version", "--version"},
		{"--help run", "--help run -- --"},
		{"", ""},
	}
	for _, c := range cases {
		in := append([]string{"withlock"}, fields(c.in)...)
		want := append([]string{"withlock"}, fields(c.want)...)
		got, err := reorderArgs(app, in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("reorderArgs(%q)\n got %q, %v\nwant %q", c.in, got, err, want)
		}
	}
}

// fields splits s at spaces, keeping '…' together (without the quotes).
func fields(s string) []string {
	var out []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			break
		}
		if s[0] == '\'' {
			end := strings.IndexByte(s[1:], '\'')
			out = append(out, s[1:end+1])
			s = s[end+2:]
			continue
		}
		word, rest, _ := strings.Cut(s, " ")
		out, s = append(out, word), rest
	}
	return out
}

// Unknown commands and flags before the command to run are usage errors,
// one line, with a suggestion when one is close.
func TestReorderArgsErrors(t *testing.T) {
	app := newApp()
	cases := []struct{ in, want string }{
		{"runn x true", `unknown command "runn"; did you mean "run"?`},
		{"version", `unknown command "version"; did you mean "--version"?`},
		{"stauts", `unknown command "stauts"; did you mean "status"?`},
		{"frobnicate", `unknown command "frobnicate" (see withlock --help)`},
		{"help runn", `unknown command "runn"; did you mean "run"?`},
		{"help scope rest", `unknown command "scope rest"; did you mean "scope reset"?`},
		{"run --wiat 5s x true", `run: unknown flag --wiat; did you mean --wait?`},
		{"run x --wiat=5s true", `run: unknown flag --wiat; did you mean --wait?`},
		{"run x --timout 5 true", `run: unknown flag --timout; did you mean --timeout?`},
		{"run -x job true", `run: unknown flag -x (see withlock run --help)`},
		{"run job -la", `run: unknown flag -la (see withlock run --help)`},
		{"scope --alow /a:write true", `scope: unknown flag --alow; did you mean --allow?`},
		{"scope reset --scope-fil f", `scope reset: unknown flag --scope-fil; did you mean --scope-file?`},
		{"gc --older 7d", `gc: unknown flag --older; did you mean --older-than?`},
		{"gc -qx", `gc: unknown flag -qx; did you mean -q?`},
		{"--wiat run x true", `unknown flag --wiat (see withlock --help)`},
		{"--verison", `unknown flag --verison; did you mean --version?`},
		{"run --timeout", `run: --timeout: missing value`},
		{"status --dir", `status: --dir: missing value`},
		{"gc --zzz", `gc: unknown flag --zzz (see withlock gc --help)`},
		{"run --quiet= x true", `run: invalid boolean value "" for -quiet: parse error`},
		{"gc -n= ", `gc: invalid boolean value "" for -n: parse error`},
		{"--help=", `invalid boolean value "" for -help: parse error`},
	}
	for _, c := range cases {
		_, err := reorderArgs(app, append([]string{"withlock"}, fields(c.in)...))
		if err == nil {
			t.Errorf("reorderArgs(%q) accepted", c.in)
			continue
		}
		code, msg := statusOf(err)
		if code != exitUsage || msg != c.want {
			t.Errorf("reorderArgs(%q): %d %q\nwant 64 %q", c.in, code, msg, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"run", "run", 0}, {"runn", "run", 1}, {"wiat", "wait", 1},
		{"stauts", "status", 1}, {"", "gc", 2}, {"kitten", "sitting", 3}, {"ca", "abc", 3},
	}
	for _, c := range cases {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
