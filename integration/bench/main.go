//go:build linux

// Command bench compares withlock with go-floor, the smallest Go lock
// wrapper (./gofloor, built at start), and with the tools people use today
// (flock, tini, timeout): start-up, lock hand-off latency, throughput under
// contention, supervision, CPU while waiting, memory per queued waiter, the
// drain of a long queue, and how status and the scope registry grow with
// what they read. Tools are measured interleaved, run by run, so machine
// noise hits all of them alike; it prints medians and ranges in one table,
// then the bars (issue 29's; with -baseline, issue 15's) with PASS or FAIL.
//
//	go run ./integration/bench [-n 200] [-only overhead,handoff] [-json reports/bench.json] [-bin withlock]
//
// It installs nothing: a peer that is not installed is named at the start
// with how to install it, and its column shows "n/a (not installed)".
// Sections live in one file each and register themselves (see section.go).
// Exit status: 0, 1 when a measurement failed or a bar failed, 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

func main() {
	os.Exit(run())
}

type options struct {
	bin, baseline, jsonPath, only string
}

func parseFlags(b *bench) options {
	var o options
	flag.IntVar(&b.n, "n", 200, "runs per tool for overhead and supervision (scope: at least 200)")
	// 200: with 50, two quiet runs of one build gave 1.36 and 1.09 x
	// go-floor (a hand-off spreads 1.5-8 ms here).
	flag.IntVar(&b.handoffRuns, "handoff-runs", 200, "hand-offs per tool")
	// 10 rounds: on the 2-core VM 5-round medians spread ±0.05 around the
	// 15-round ratio.
	flag.IntVar(&b.throughputRounds, "throughput-rounds", 10, "contention rounds per tool")
	flag.IntVar(&b.workers, "workers", 8, "concurrent workers in the contention section")
	flag.IntVar(&b.perWorker, "per-worker", 25, "critical sections per worker")
	flag.IntVar(&b.waitRuns, "wait-runs", 3, "waits (of -wait) per tool")
	flag.DurationVar(&b.wait, "wait", 5*time.Second, "how long the waiting section waits for a held lock")
	flag.IntVar(&b.memRuns, "mem-runs", 3, "memory runs per tool (peak RSS; USS of the queued waiters)")
	flag.IntVar(&b.queuedWaiters, "queued", 100, "waiters queued on one lock while their memory is read")
	flag.IntVar(&b.drainWaiters, "drain-waiters", 200, "waiters queued behind one holder in the drain section")
	flag.IntVar(&b.drainRounds, "drain-rounds", 3, "drain rounds per tool")
	flag.IntVar(&b.statusRuns, "status-runs", 15, "runs per tool in the status section")
	flag.IntVar(&b.scopeRuns, "scope-runs", 30, "runs per tool in the scope section")
	flag.DurationVar(&b.settle, "settle", 50*time.Millisecond, "hand-off: time given the waiter to start waiting")
	flag.StringVar(&o.only, "only", "", "comma-separated sections to run (default all): "+strings.Join(sectionNames(), ","))
	flag.StringVar(&o.bin, "bin", "", "withlock binary to measure (default: build ./cmd/withlock)")
	flag.StringVar(&o.baseline, "baseline", "", "an earlier withlock build, measured beside this one in the overhead and handoff sections (issue 15's bars: ≤ 1.05 ×)")
	flag.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	flag.Parse()
	return o
}

func run() int {
	b := &bench{}
	opts := parseFlags(b)
	selected, err := selectSections(opts.only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "withlock-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	b.tmp = tmp
	b.env = benchEnv()
	b.withlockAsFound, b.withlockMissing = prepareWithlock(opts.bin, tmp)
	b.withlockGiven = opts.bin != ""
	b.withlock = b.installed(b.withlockAsFound, "withlock", &b.withlockMissing)
	if opts.baseline != "" {
		asFound, missing := prepareWithlock(opts.baseline, tmp)
		b.baseline = b.installed(asFound, "withlock-baseline", &missing)
		b.baselineMissing = missing
	}
	goFloor, goFloorMissing := prepareGoFloor(tmp)
	b.goFloor = b.installed(goFloor, "gofloor", &goFloorMissing)
	b.goFloorMissing = goFloorMissing

	report := benchReport{Started: time.Now(), Machine: machine(b.withlock)}
	if missing := missingPeers(exec.LookPath); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "bench: not installed (their columns say n/a): %s\n", strings.Join(missing, "; "))
	}
	for _, s := range selected {
		report.Sections = append(report.Sections, runSection(b, s))
	}
	report.Bars = evaluate(report, barSpecs(b))
	writeTable(os.Stdout, report)
	writeBars(os.Stdout, report.Bars)
	if opts.jsonPath != "" {
		if err := writeJSON(opts.jsonPath, report); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Printf("\nresults: %s\n", opts.jsonPath)
	}
	if n := barsFailed(report.Bars); n > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d of the bars failed\n", n)
		return 1
	}
	if b.withlockMissing != "" || report.failed() {
		return 1
	}
	return 0
}

func runSection(b *bench, s section) sectionResult {
	rounds := s.runs(b)
	fmt.Fprintf(os.Stderr, "bench: %s (%d rounds)…", s.name, rounds)
	start := time.Now()
	tools, cleanup, err := s.prepare(b)
	defer cleanup()
	if err != nil {
		fmt.Fprintf(os.Stderr, " error: %v\n", err)
		return sectionResult{Name: s.name, Title: s.title, Unit: s.unit, Error: err.Error()}
	}
	interleave(rounds, tools, s.warmup)
	fmt.Fprintf(os.Stderr, " %.1fs\n", time.Since(start).Seconds())
	return result(s, tools)
}

// peerPackages are the tools the sections compare with, and the Debian
// package each comes in; the bench never installs them.
var peerPackages = []struct{ tool, install string }{
	{"flock", "apt-get install util-linux"},
	{"tini", "apt-get install tini"},
	{"timeout", "apt-get install coreutils"},
	{"etcdctl", "apt-get install etcd-client (etcd sections only)"},
}

// missingPeers names each peer lookPath cannot find, with its install command.
func missingPeers(lookPath func(string) (string, error)) []string {
	var out []string
	for _, p := range peerPackages {
		if _, err := lookPath(p.tool); err != nil {
			out = append(out, p.tool+" ("+p.install+")")
		}
	}
	return out
}

func sectionNames() []string {
	sortSections()
	var names []string
	for _, s := range sections {
		names = append(names, s.name)
	}
	return names
}

func sortSections() {
	sort.SliceStable(sections, func(i, j int) bool { return sections[i].order < sections[j].order })
}

// selectSections returns the sections named in only (all when empty), in order.
func selectSections(only string) ([]section, error) {
	sortSections()
	if only == "" {
		return sections, nil
	}
	want := strings.Split(only, ",")
	var out []section
	for _, s := range sections {
		if slices.Contains(want, s.name) {
			out = append(out, s)
		}
	}
	for _, name := range want {
		if !slices.Contains(sectionNames(), name) {
			return nil, fmt.Errorf("unknown section %q (have %s)", name, strings.Join(sectionNames(), ", "))
		}
	}
	return out, nil
}

// prepareWithlock returns the binary to measure, or why there is none.
func prepareWithlock(bin, tmp string) (path, missing string) {
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -bin:", err)
			return "", "n/a (binary not found)"
		}
		return abs, ""
	}
	path = filepath.Join(tmp, "built", "withlock")
	if err := releaseBuild(path, "github.com/withlock/withlock/cmd/withlock"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return "", "n/a (build failed)"
	}
	return path, ""
}

// installed puts a copy of the binary at path into the scratch directory's
// installed/ and returns the copy's path; "" when path is "" or the copy
// fails (missing then says why). Every Go binary the bench runs is run from
// such a copy: see installCopy.
func (b *bench) installed(path, name string, missing *string) string {
	if path == "" {
		return ""
	}
	dst := filepath.Join(b.tmp, "installed", name)
	if err := installCopy(path, dst); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		*missing = "n/a (install failed)"
		return ""
	}
	return dst
}

// prepareGoFloor builds the go-floor peer (./integration/bench/gofloor)
// into tmp and returns its path, or why there is none.
func prepareGoFloor(tmp string) (path, missing string) {
	path = filepath.Join(tmp, "built", "gofloor")
	if err := releaseBuild(path, "github.com/withlock/withlock/integration/bench/gofloor"); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return "", "n/a (build failed)"
	}
	return path, ""
}

// releaseBuild builds pkgs (import paths or directories inside the module)
// as the Makefile's release build does (make build): static, -trimpath,
// the version stamped (an unstamped build reads its build info for the
// version at every start).
// With several packages, out is a directory ending in "/" and each binary
// is named after its package's directory.
func releaseBuild(out string, pkgs ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"build", "-trimpath", "-ldflags", "-X main.version=bench", "-o", out}, pkgs...)
	build := exec.CommandContext(ctx, "go", args...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, output)
	}
	return nil
}

// benchEnv is this process's environment without withlock's own variables,
// so every run uses the --dir it is given and the defaults otherwise.
func benchEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WITHLOCK_") && !strings.HasPrefix(kv, "NEXUSCORE_") {
			env = append(env, kv)
		}
	}
	return env
}

func machine(withlock string) machineInfo {
	m := machineInfo{Cores: runtime.NumCPU(), Go: runtime.Version(), CPU: "unknown CPU", Withlock: "n/a"}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if withlock != "" {
		if out, err := exec.Command(withlock, "--version").Output(); err == nil {
			m.Withlock = strings.TrimSpace(string(out))
		}
	}
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Withlock += " (" + strings.TrimSpace(string(out)) + ")"
	}
	return m
}

func writeJSON(path string, r benchReport) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
