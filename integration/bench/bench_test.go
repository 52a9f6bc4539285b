//go:build linux

package main

import (
	"bytes"
	"errors"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []float64
		want summary
	}{
		{nil, summary{}},
		{[]float64{3}, summary{1, 3, 3, 3}},
		{[]float64{5, 1, 3}, summary{3, 3, 1, 5}},
		{[]float64{4, 1, 3, 2}, summary{4, 2.5, 1, 4}},
	}
	for _, tt := range tests {
		if got := summarize(tt.in); got != tt.want {
			t.Errorf("summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		in   []float64
		p    float64
		want float64
	}{
		{nil, 90, 0},
		{[]float64{3}, 90, 3},
		{[]float64{5, 1, 3, 2, 4, 6, 8, 7, 10, 9}, 90, 9},
		{[]float64{5, 1, 3, 2, 4, 6, 8, 7, 10, 9}, 50, 5},
		{[]float64{2, 1}, 90, 2},
	}
	for _, tt := range tests {
		if got := percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.in, tt.p, got, tt.want)
		}
	}
}

// TestTableShowsTargetAndP90: a section with a target prints it, and the
// p90 is in the table and the JSON.
func TestTableShowsTargetAndP90(t *testing.T) {
	s := section{name: "scope", title: "scope", unit: "ms", target: 5}
	samples := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 40}
	r := benchReport{Sections: []sectionResult{result(s, []*tool{{name: "withlock", command: "c", samples: samples}})}}
	if got := r.Sections[0]; got.Target != 5 || got.Tools[0].P90 != 9 {
		t.Errorf("target %v, p90 %v; want 5, 9", got.Target, got.Tools[0].P90)
	}
	var out bytes.Buffer
	writeTable(&out, r)
	for _, want := range []string{"p90", "9.00", "target: withlock under 5.00 ms"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestInterleaveRotatesAndStopsAtFirstError: every round runs each tool once,
// a different tool goes first each round, a missing tool is never run and a
// failing tool is not run again.
func TestInterleaveRotatesAndStopsAtFirstError(t *testing.T) {
	var order []string
	recorder := func(name string, failAt int) *tool {
		return &tool{name: name, measure: func(i int) (float64, error) {
			order = append(order, name)
			if i == failAt {
				return 0, errors.New("boom")
			}
			return float64(i), nil
		}}
	}
	a, b := recorder("a", -2), recorder("b", 1)
	missing := &tool{name: "m", missing: "n/a (not installed)", measure: func(int) (float64, error) {
		t.Error("missing tool was measured")
		return 0, nil
	}}
	interleave(3, []*tool{a, b, missing}, true)
	want := []string{"a", "b", "a", "b", "b", "a", "a"} // warm-ups, round 0, round 1 (b fails), round 2
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if !slices.Equal(a.samples, []float64{0, 1, 2}) || !slices.Equal(b.samples, []float64{0}) || b.err == nil {
		t.Errorf("a %v, b %v (err %v)", a.samples, b.samples, b.err)
	}
}

func TestTableShowsRatiosAndMissingPeers(t *testing.T) {
	s := section{name: "x", title: "demo", unit: "ms", note: "a note"}
	tools := []*tool{
		{name: "withlock", command: "withlock run", samples: []float64{2, 4, 3}},
		{name: "flock", command: "flock F true", samples: []float64{1, 1.5, 2}},
		{name: "tini", command: "tini true", missing: "n/a (not installed)"},
		{name: "broken", command: "broken", err: errors.New("exited 3")},
	}
	r := benchReport{Sections: []sectionResult{result(s, tools)}}
	if ratio := r.Sections[0].Tools[1].Ratio; ratio == nil || *ratio != 2 {
		t.Errorf("ratio withlock/flock = %v, want 2", ratio)
	}
	var out bytes.Buffer
	writeTable(&out, r)
	for _, want := range []string{"demo [ms]", "3.00", "2.00×", "n/a (not installed)", "error: exited 3", "(a note)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if !r.failed() {
		t.Error("a tool error does not mark the report failed")
	}
}

func TestSelectSections(t *testing.T) {
	got, err := selectSections("memory,overhead")
	if err != nil || len(got) != 2 || got[0].name != "overhead" || got[1].name != "memory" {
		t.Errorf("selectSections = %v, %v; want overhead then memory", got, err)
	}
	if got, err := selectSections("scope"); err != nil || len(got) != 1 || got[0].target != 5 {
		t.Errorf("selectSections(scope) = %v, %v; want the scope section with its 5 ms target", got, err)
	}
	if _, err := selectSections("nope"); err == nil {
		t.Error("unknown section accepted")
	}
}

// TestPeakRSSReadsTheProcessItself: a process that touches 64 MiB shows at
// least that much, and true shows far less (no carry-over from this process).
func TestPeakRSSReadsTheProcessItself(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	b := &bench{tmp: t.TempDir(), env: os.Environ()}
	big, err := b.peakRSS(python, "-c", "import time; b = bytearray(64 << 20); time.sleep(0.3)")(0)
	if err != nil || big < 64 {
		t.Errorf("peak RSS of a 64 MiB python = %.1f MiB, %v", big, err)
	}
	sleep, _ := exec.LookPath("sleep")
	small, err := b.peakRSS(sleep, "0.2")(0)
	if err != nil || small <= 0 || small > 16 {
		t.Errorf("peak RSS of sleep = %.1f MiB, %v", small, err)
	}
}

// TestScopeSectionMeasures: the scope section builds its registry of 1,000
// allocations and times a register + release through the locks API.
func TestScopeSectionMeasures(t *testing.T) {
	s, err := selectSections("scope")
	if err != nil {
		t.Fatal(err)
	}
	tools, cleanup, err := s[0].prepare(&bench{tmp: t.TempDir()})
	defer cleanup()
	if err != nil || len(tools) != 1 {
		t.Fatalf("prepare = %v, %v", tools, err)
	}
	for i := range 2 {
		if v, err := tools[0].measure(i); err != nil || v <= 0 {
			t.Fatalf("run %d = %v ms, %v", i, v, err)
		}
	}
}

// TestGoFloorPassesStatusOn: the go-floor peer builds, runs its command
// under the lock and exits with the command's status, 128+N for signal N.
func TestGoFloorPassesStatusOn(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not in PATH")
	}
	b := &bench{tmp: t.TempDir(), env: os.Environ()}
	path, missing := prepareGoFloor(b.tmp)
	if missing != "" {
		t.Fatalf("go-floor: %s", missing)
	}
	lock := filepath.Join(b.tmp, "f.lock")
	for _, tt := range []struct {
		script string
		want   int
	}{{"exit 0", 0}, {"exit 3", 3}, {"kill -TERM $$", 128 + 15}} {
		if _, err := b.runExpect(tt.want, path, lock, "sh", "-c", tt.script); err != nil {
			t.Errorf("%s: %v", tt.script, err)
		}
	}
	if _, err := b.runExpect(127, path, lock, "no-such-command-here"); err != nil {
		t.Error(err)
	}
}

// TestTableShowsDeltasAgainstBase: a section with a base prints each
// tool's median minus the base's, signed, and puts it in the JSON; tools
// without runs get none.
func TestTableShowsDeltasAgainstBase(t *testing.T) {
	s := section{name: "d", title: "deltas", unit: "ms", base: "hello"}
	tools := []*tool{
		{name: "withlock", command: "withlock --version", samples: []float64{3, 3.5, 4}},
		{name: "hello", command: "hello", samples: []float64{1, 1, 1}},
		{name: "+fast", command: "fast", samples: []float64{0.75}},
		{name: "+gone", command: "gone", missing: "n/a (build failed)"},
	}
	r := benchReport{Sections: []sectionResult{result(s, tools)}}
	var got []string
	for _, tr := range r.Sections[0].Tools {
		got = append(got, deltaCell(tr))
	}
	if want := []string{"+2.50 (3.50×)", "+0.00 (1.00×)", "-0.25 (0.75×)", ""}; !slices.Equal(got, want) {
		t.Errorf("deltas %q, want %q", got, want)
	}
	var out bytes.Buffer
	writeTable(&out, r)
	for _, want := range []string{"Δ vs hello", "+2.50 (3.50×)", "-0.25 (0.75×)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	noBase := result(section{name: "x", unit: "ms"}, tools)
	if noBase.Tools[0].Delta != nil {
		t.Error("a section without a base has deltas")
	}
}

// TestDepinitProgramsAreGofmtdHelloWorlds: hello imports nothing else, each
// dependency gets a program of its own, "all" imports every one, and each
// source is already gofmt'd and imports exactly what it says.
func TestDepinitProgramsAreGofmtdHelloWorlds(t *testing.T) {
	progs := depinitPrograms()
	if len(progs) != len(depinitDeps)+2 || progs[0].name != "hello" || progs[len(progs)-1].name != "all" {
		t.Fatalf("programs %+v: want hello, one per dependency, all", progs)
	}
	var all []string
	for i, d := range depinitDeps {
		if p := progs[i+1]; p.name != d.name || !slices.Equal(p.imports, []string{d.path}) {
			t.Errorf("program %d = %+v, want %s importing %s", i+1, p, d.name, d.path)
		}
		all = append(all, d.path)
	}
	for _, p := range progs {
		src := p.source()
		formatted, err := format.Source([]byte(src))
		if err != nil || string(formatted) != src {
			t.Errorf("%s: not gofmt'd (%v):\n%s", p.name, err, src)
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p.name+".go", src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		var blank []string
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path != "os" {
				blank = append(blank, path)
			}
		}
		want := p.imports
		if p.name == "all" {
			want = all
		}
		if !slices.Equal(blank, slices.Sorted(slices.Values(want))) {
			t.Errorf("%s imports %v, want os and %v", p.name, blank, want)
		}
	}
}

// TestDepinitDepsAreWithlocks: depinitDeps is exactly the set of packages
// from other modules that withlock's own packages import in the release
// build of cmd/withlock.
func TestDepinitDepsAreWithlocks(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not in PATH")
	}
	const module = "github.com/withlock/withlock"
	list := exec.Command("go", "list", "-deps", "-tags", "urfave_cli_no_docs",
		"-f", `{{if .Module}}{{if eq .Module.Path "`+module+`"}}{{join .Imports "\n"}}{{end}}{{end}}`,
		module+"/cmd/withlock")
	list.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var linked []string
	for _, path := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(path, "/")
		if strings.Contains(first, ".") && !strings.HasPrefix(path, module+"/") && !slices.Contains(linked, path) {
			linked = append(linked, path)
		}
	}
	var listed []string
	for _, d := range depinitDeps {
		listed = append(listed, d.path)
	}
	slices.Sort(linked)
	slices.Sort(listed)
	if !slices.Equal(linked, listed) {
		t.Errorf("cmd/withlock links %v from other modules; depinitDeps has %v", linked, listed)
	}
}

// TestInstallCopyAndPageCacheDrop: the installed copy is byte for byte the
// source with mode 0755; a freshly written file is all in the page cache, and
// dropFromPageCache either empties it (as on ext4) or says it could not (as
// on tmpfs, which keeps its pages).
func TestInstallCopyAndPageCacheDrop(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := bytes.Repeat([]byte("withlock"), 64<<10) // 512 KiB, 128 pages
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "installed", "bin")
	if err := installCopy(src, dst); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("installed copy differs from the source (err %v)", err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed copy: %v, mode %v", err, fi.Mode())
	}
	resident := func() (int, int) {
		f, err := os.Open(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cached, total, err := residentPages(int(f.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		return cached, total
	}
	if cached, total := resident(); total != 128 || cached != total {
		t.Fatalf("fresh copy: %d of %d pages cached, want 128 of 128", cached, total)
	}
	err = dropFromPageCache(dst)
	cached, total := resident()
	switch {
	case err == nil && cached*10 > total:
		t.Fatalf("dropFromPageCache succeeded with %d of %d pages cached", cached, total)
	case err != nil && !strings.Contains(err.Error(), "still cached"):
		t.Fatal(err)
	case err != nil && cached*10 <= total:
		t.Fatalf("dropFromPageCache failed (%v) yet only %d of %d pages are cached", err, cached, total)
	}
	t.Logf("after the drop: %d of %d pages cached (err %v)", cached, total, err)
}
