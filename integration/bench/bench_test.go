//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
	if got, err := selectSections("scope,status"); err != nil || len(got) != 2 || got[0].name != "status" {
		t.Errorf("selectSections(scope,status) = %v, %v; want status then scope", got, err)
	}
	if _, err := selectSections("nope"); err == nil {
		t.Error("unknown section accepted")
	}
}

// TestPeakRSSReadsTheProcessItself: a process that touches 64 MiB shows at
// least that much, and true shows far less (no carry-over from this process).
func TestPeakRSSReadsTheProcessItself(t *testing.T) {
	t.Parallel()
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

// TestGoFloorPassesStatusOn: the go-floor peer builds, runs its command
// under the lock and exits with the command's status, 128+N for signal N.
func TestGoFloorPassesStatusOn(t *testing.T) {
	t.Parallel()
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
	// -signals: the same statuses, and a signal sent to go-floor reaches
	// the command (its trap exits 7); without -signals it does not (Go
	// drops an unsubscribed USR1), so the command's own exit, 0, wins.
	for _, tt := range []struct {
		args []string
		want int
	}{
		{[]string{"-signals", lock, "sh", "-c", "exit 3"}, 3},
		{[]string{"-signals", lock, "sh", "-c", "kill -TERM $$"}, 128 + 15},
		{[]string{"-signals", lock, "sh", "-c", `trap "exit 7" USR1; kill -USR1 $PPID; sleep 5 & wait`}, 7},
		{[]string{lock, "sh", "-c", `trap "exit 7" USR1; kill -USR1 $PPID; sleep 0.3`}, 0},
	} {
		if _, err := b.runExpect(tt.want, append([]string{path}, tt.args...)...); err != nil {
			t.Errorf("%q: %v", tt.args, err)
		}
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

// TestInstallCopy: the installed copy is byte for byte the source, mode 0755.
func TestInstallCopy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	data := bytes.Repeat([]byte("withlock"), 64<<10)
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
	if err := installCopy(filepath.Join(dir, "nope"), dst); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a missing source: %v, want an error naming it", err)
	}
}

// TestBarsPassFailReportAndNA: a bar holds at its limit, fails above it,
// is only reported without a limit, and is n/a when a tool it needs has
// no runs; the table prints each with its bound.
func TestBarsPassFailReportAndNA(t *testing.T) {
	sec := func(name string, tools ...*tool) sectionResult {
		return result(section{name: name, title: name, unit: "ms"}, tools)
	}
	r := benchReport{Sections: []sectionResult{
		sec("overhead",
			&tool{name: "withlock", samples: []float64{2.9}},
			&tool{name: "flock", samples: []float64{1}},
			&tool{name: "go-floor", samples: []float64{2}},
			&tool{name: goFloorSignalsName, samples: []float64{2}}),
		sec("handoff",
			&tool{name: "withlock", samples: []float64{2}},
			&tool{name: "go-floor", samples: []float64{1}},
			&tool{name: baselineName, samples: []float64{1.9}}),
		sec("drain",
			&tool{name: "withlock", samples: []float64{2}},
			&tool{name: "flock", missing: "n/a (not installed)"}),
	}}
	b := &bench{workers: 8, perWorker: 25, queuedWaiters: 100, drainWaiters: 200, wait: 5 * time.Second}
	bars := evaluate(r, barSpecs(b))
	verdict := map[string]string{}
	for _, bar := range bars {
		verdict[bar.Figure+" "+bar.Unit] = bar.Verdict
	}
	for figure, want := range map[string]string{
		"start-up, next to go-floor with SPEC §5's signals × go-floor -signals":  "PASS", // 1.45 at a 1.45 bar
		"start-up: lock, run `true`, release × go-floor":                         "report",
		"start-up, next to flock × flock":                                        "report",
		"hand-off latency × go-floor":                                            "FAIL", // 2 above 1.3
		"200 waiters queued behind one holder: drain time after it ends × flock": "n/a",  // flock not installed
		"CPU while waiting CPU-s / 10 s":                                         "n/a",  // section not run
		"start-up, next to the baseline build (issue 15) × baseline":             "n/a",  // no -baseline in overhead
		"hand-off, next to the baseline build (issue 15) × baseline":             "FAIL", // 2 ÷ 1.9 = 1.053
	} {
		if got := verdict[figure]; got != want {
			t.Errorf("%s: %q, want %q (all: %v)", figure, got, want, verdict)
		}
	}
	if n := barsFailed(bars); n != 2 {
		t.Errorf("%d bars failed, want 2", n)
	}
	var out bytes.Buffer
	writeBars(&out, bars)
	for _, want := range []string{"1.45 × go-floor -signals", "≤ 1.45 × go-floor -signals", "PASS", "2.00 × go-floor", "≤ 1.30 × go-floor", "FAIL", "report it", "n/a", "2.90 withlock ÷ 2.00 go-floor"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bars table lacks %q:\n%s", want, out.String())
		}
	}
}

// TestWaitingBarIsCPUSecondsPerTenSeconds: the section reports ms of CPU
// per 10 s of waiting; 20 ms is 0.02 CPU-s per 10 s, 60 ms fails.
func TestWaitingBarIsCPUSecondsPerTenSeconds(t *testing.T) {
	for _, c := range []struct {
		ms      float64
		want    float64
		verdict string
	}{{20, 0.02, "PASS"}, {60, 0.06, "FAIL"}} {
		r := benchReport{Sections: []sectionResult{result(section{name: "waiting"}, []*tool{{name: "withlock", samples: []float64{c.ms}}})}}
		found := false
		for _, bar := range evaluate(r, barSpecs(&bench{wait: 5 * time.Second})) {
			if bar.Unit == "CPU-s / 10 s" {
				found = true
				if bar.Value != c.want || bar.Verdict != c.verdict {
					t.Errorf("waiting bar from %v ms = %v %s, want %v %s", c.ms, bar.Value, bar.Verdict, c.want, c.verdict)
				}
			}
		}
		if !found {
			t.Fatal("no waiting bar")
		}
	}
}

// TestWaitCPUCountsOnlyTheWait: a sleeper's figure is near 0; a spinner's
// (never quiet, measured from blockedBy) is near 10,000 ms per 10 s on a
// quiet machine and far over the bar on a loaded one, so the figure can fail; start-up does not count (a shell that burns 300 ms of CPU
// at start, then sleeps, is measured once quiet).
func TestWaitCPUCountsOnlyTheWait(t *testing.T) {
	t.Parallel()
	b := &bench{env: benchEnv()}
	sleeper, err := b.waitCPUOf(0, "sh", "-c", "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; sleep 3")(0)
	if err != nil {
		t.Fatal(err)
	}
	if sleeper > 200 {
		t.Errorf("a sleeper after a busy start: %.1f ms CPU per 10 s, want near 0", sleeper)
	}
	spinner, err := b.waitCPUOf(0, "bash", "-c", "while [ $SECONDS -lt 4 ]; do :; done")(0)
	if err != nil {
		t.Fatal(err)
	}
	// On a quiet machine a spinner shows most of 10,000; on a loaded one
	// (CI runs packages side by side on 2 cores) it gets its share only.
	// What matters is that it fails the bar by far: 5× the 50 ms bound.
	if spinner < 250 {
		t.Errorf("a spinner: %.1f ms CPU per 10 s, want well over the bar's 50 (most of 10,000 when the machine is quiet)", spinner)
	}
	if _, err := b.waitCPUOf(0, "true")(0); err == nil {
		t.Error("a process that exits at once was measured")
	}
}

// TestMissingPeersNamesThePackage: every missing peer is named with how to
// install it; present ones are not named.
func TestMissingPeersNamesThePackage(t *testing.T) {
	got := missingPeers(func(name string) (string, error) {
		if name == "flock" {
			return "/usr/bin/flock", nil
		}
		return "", exec.ErrNotFound
	})
	joined := strings.Join(got, "; ")
	if strings.Contains(joined, "flock") || !strings.Contains(joined, "tini (apt-get install tini)") ||
		!strings.Contains(joined, "etcdctl (apt-get install etcd-client") || len(got) != len(peerPackages)-1 {
		t.Errorf("missingPeers = %q", got)
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int]string{0: "0", 100: "100", 1000: "1,000", 10000: "10,000", 1234567: "1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWaitBlockedSeesSleepersNotSpinners: sleeping processes count as
// blocked and have a small USS; a spinning one never does (the negative
// control), and one that has exited is an error.
func TestWaitBlockedSeesSleepersNotSpinners(t *testing.T) {
	t.Parallel()
	start := func(argv ...string) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	var sleepers []int
	for range 3 {
		sleepers = append(sleepers, start("sleep", "30").Process.Pid)
	}
	if err := waitBlocked(sleepers, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if uss, err := ussPerWaiterMiB(sleepers); err != nil || uss <= 0 || uss > 4 {
		t.Errorf("USS of sleep = %v MiB, %v", uss, err)
	}
	spinner := start("sh", "-c", "while :; do :; done").Process.Pid
	if err := waitBlocked(append(sleepers, spinner), time.Second); err == nil || !strings.Contains(err.Error(), "1 of 4 waiters not blocked") {
		t.Errorf("a spinning process: %v", err)
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	if err := waitBlocked([]int{gone.Process.Pid}, time.Second); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("an exited process: %v", err)
	}
}

// TestRunQueueWithFlock: flock waiters queue, are measured while blocked
// and all run once the holder ends; a waiter whose command fails makes the
// run fail.
func TestRunQueueWithFlock(t *testing.T) {
	t.Parallel()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock not installed")
	}
	b := &bench{tmp: t.TempDir(), env: os.Environ()}
	lock := filepath.Join(b.tmp, "q.lock")
	uss, drain, err := b.runQueue([]string{flock, lock}, []string{flock, "-w", "60", lock, "true"}, 5, true)
	if err != nil || uss <= 0 || uss > 4 || drain <= 0 {
		t.Fatalf("runQueue = %v MiB, %v, %v", uss, drain, err)
	}
	if _, _, err := b.runQueue([]string{flock, lock}, []string{flock, "-w", "60", lock, "false"}, 3, false); err == nil || !strings.Contains(err.Error(), "exited 1") {
		t.Errorf("failing waiters: %v", err)
	}
}

// TestStatusAndScopeFixtures: with a real withlock, the status section's
// directory of stale locks is what `withlock status` lists, and the scope
// registry's live allocations survive a scoped run; allocations of a dead
// process do not (the check that guards the figure can fail).
func TestStatusAndScopeFixtures(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not in PATH")
	}
	b := &bench{tmp: t.TempDir(), env: benchEnv()}
	b.withlock, b.withlockMissing = prepareWithlock("", b.tmp)
	if b.withlockMissing != "" {
		t.Fatal(b.withlockMissing)
	}
	dir, err := b.staleLockDir(20)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.checkStaleLocks(dir, 21); err == nil {
		t.Error("checkStaleLocks accepted 20 locks as 21")
	}
	// waitStale fails on a lock whose holder lives (its negative control).
	held := b.dir("status-held")
	holder := exec.Command(b.withlock, "run", "--dir", held, "h", "--", "sleep", "30")
	holder.Env = b.env
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if err := b.waitStale(held, "h", 300*time.Millisecond); err == nil {
		t.Error("waitStale: a live holder's lock counted as stale")
	}

	file := filepath.Join(b.dir("scope"), "scope.lock")
	if err := writeScopeRegistry(file, 50); err != nil {
		t.Fatal(err)
	}
	scoped := []string{b.withlock, "scope", "--scope-file", file, "--allow", "/bench/new:write:recursive", "--", "true"}
	if _, err := b.runExpect(0, scoped...); err != nil {
		t.Fatal(err)
	}
	if n, err := scopeAllocations(file); err != nil || n != 50 {
		t.Errorf("after a scoped run: %d allocations, %v; want 50", n, err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	// The same registry with every allocation's holder dead.
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		Allocations []map[string]any `json:"allocations"`
	}
	if err := json.Unmarshal(data, &reg); err != nil || len(reg.Allocations) != 50 {
		t.Fatalf("registry: %d allocations, %v", len(reg.Allocations), err)
	}
	for _, a := range reg.Allocations {
		a["pid"] = dead.Process.Pid
	}
	if data, err = json.Marshal(reg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.runExpect(0, scoped...); err != nil {
		t.Fatal(err)
	}
	if n, err := scopeAllocations(file); err != nil || n != 0 {
		t.Errorf("allocations of a dead pid: %d left, %v; want 0 (reclaimed)", n, err)
	}
}

// -baseline adds one tool, measured with the baseline's path, to the
// sections that compare builds; without it they have none, and a baseline
// that could not be installed shows why instead of numbers.
func TestBaselineTools(t *testing.T) {
	measure := func(path string) func(int) (float64, error) {
		return func(int) (float64, error) { return float64(len(path)), nil }
	}
	if got := (&bench{}).baselineTools("cmd", measure); len(got) != 0 {
		t.Fatalf("without -baseline: %d tools, want none", len(got))
	}
	got := (&bench{baseline: "/x/withlock-baseline"}).baselineTools("cmd", measure)
	if len(got) != 1 || got[0].name != baselineName || got[0].missing != "" {
		t.Fatalf("with -baseline: %+v, want one measured %q tool", got, baselineName)
	}
	if v, err := got[0].measure(0); err != nil || v != float64(len("/x/withlock-baseline")) {
		t.Fatalf("the baseline tool measured %v, %v: not with the baseline's path", v, err)
	}
	got = (&bench{baselineMissing: "n/a (binary not found)"}).baselineTools("cmd", measure)
	if len(got) != 1 || got[0].missing != "n/a (binary not found)" || got[0].measure != nil {
		t.Fatalf("with a missing baseline: %+v, want one tool saying why", got)
	}
}
