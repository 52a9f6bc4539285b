//go:build linux

package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// A bar is one figure of the bars table with the bound it must hold in
// this run. Its figure is computed from the sections' medians; a figure
// whose tools were not measured (a peer not installed, a section not run
// with -only) is n/a, neither a pass nor a failure.
type bar struct {
	Figure  string  `json:"figure"`          // what is measured, as the issue names it
	Value   float64 `json:"value,omitempty"` // the figure in this run
	Unit    string  `json:"unit"`            // e.g. "× go-floor"
	Limit   float64 `json:"limit,omitempty"` // the bound; 0: reported only
	Verdict string  `json:"verdict"`         // PASS | FAIL | report | n/a
	Detail  string  `json:"detail,omitempty"`
}

// median is the median of tool in section, false when it has no runs.
func (r benchReport) median(section, tool string) (float64, bool) {
	for _, s := range r.Sections {
		if s.Name != section {
			continue
		}
		for _, t := range s.Tools {
			if t.Tool == tool && t.Runs > 0 {
				return t.Median, true
			}
		}
	}
	return 0, false
}

// ratioOf is median(section, a) ÷ median(section2, b), with a detail line.
func (r benchReport) ratioOf(section, a, section2, b string) (float64, string, bool) {
	x, okA := r.median(section, a)
	y, okB := r.median(section2, b)
	if !okA || !okB || y <= 0 {
		return 0, "", false
	}
	return x / y, fmt.Sprintf("%s %s ÷ %s %s", num(x), a, num(y), b), true
}

// barSpec is how one bar's figure is found in a report.
type barSpec struct {
	figure, unit string
	limit        float64
	value        func(r benchReport) (float64, string, bool)
}

// barSpecs are the bars (issue 29 re-based them on go-floor -signals) for b's shapes (workers, waiters); the
// waiting section's CPU is scaled from b.wait to CPU-s per 10 s.
func barSpecs(b *bench) []barSpec {
	waitSeconds := b.wait.Seconds()
	lastStatus := statusSizes[len(statusSizes)-1]
	ratio := func(section, a, section2, b string) func(benchReport) (float64, string, bool) {
		return func(r benchReport) (float64, string, bool) { return r.ratioOf(section, a, section2, b) }
	}
	return []barSpec{
		{"start-up: lock, run `true`, release", "× go-floor", 0, ratio("overhead", "withlock", "overhead", "go-floor")},
		{"start-up, next to flock", "× flock", 0, ratio("overhead", "withlock", "overhead", "flock")},
		{"start-up, next to go-floor with SPEC §5's signals", "× go-floor -signals", 1.45, ratio("overhead", "withlock", "overhead", goFloorSignalsName)},
		{"go-floor's start-up with SPEC §5's signals", "× go-floor", 0, ratio("overhead", goFloorSignalsName, "overhead", "go-floor")},
		{fmt.Sprintf("%d workers × %d on one lock", b.workers, b.perWorker), "× go-floor", 0, ratio("throughput", "withlock", "throughput", "go-floor")},
		{fmt.Sprintf("%d workers × %d, next to go-floor with SPEC §5's signals", b.workers, b.perWorker), "× go-floor -signals", 1.4, ratio("throughput", "withlock", "throughput", goFloorSignalsName)},
		{"hand-off latency", "× go-floor", 1.3, ratio("handoff", "withlock", "handoff", "go-floor")},
		{"CPU while waiting", "CPU-s / 10 s", 0.05, func(r benchReport) (float64, string, bool) {
			v, ok := r.median("waiting", "withlock")
			if !ok {
				return 0, "", false
			}
			return v / 1000, fmt.Sprintf("%s ms CPU per 10 s blocked in a %gs wait (start-up not counted)", num(v), waitSeconds), true
		}},
		{fmt.Sprintf("private memory (USS) per queued waiter, %d queued", b.queuedWaiters), "MiB", 1.5, func(r benchReport) (float64, string, bool) {
			v, ok := r.median("queued", "withlock")
			return v, "", ok
		}},
		{fmt.Sprintf("%d waiters queued behind one holder: drain time after it ends", b.drainWaiters), "× flock", 0, ratio("drain", "withlock", "drain", "flock")},
		{fmt.Sprintf("%d waiters queued behind one holder: drain time, next to go-floor", b.drainWaiters), "× go-floor", 1.5, ratio("drain", "withlock", "drain", "go-floor")},
		{fmt.Sprintf("`status RUN_ID` with %s locks in the dir", commas(lastStatus)), "× one run's wall", 1,
			ratio("status", statusTool(false, lastStatus), "status", "withlock run")},
		{fmt.Sprintf("`status --json` with %s locks", commas(lastStatus)), "ms", 0, func(r benchReport) (float64, string, bool) {
			v, ok := r.median("status", statusTool(true, lastStatus))
			return v, "", ok
		}},
		{"scope register + release at 100 allocations", "× one run's wall", 1.5, ratio("scope", scopeTool(100), "scope", "withlock run")},
		{"scope: 1,000 allocations ÷ 100 (how it grows)", "×", 0, ratio("scope", scopeTool(1000), "scope", scopeTool(100))},
		{"supervise `sleep 0`, next to tini -s -g", "× tini", 0, ratio("supervision", "withlock", "supervision", "tini")},
		// Issue 15: the liveness probe on every acquisition's path costs
		// no more than 5 % next to the build before it (-baseline).
		{"start-up, next to the baseline build (issue 15)", "× baseline", 1.05, ratio("overhead", "withlock", "overhead", baselineName)},
		{"hand-off, next to the baseline build (issue 15)", "× baseline", 1.05, ratio("handoff", "withlock", "handoff", baselineName)},
	}
}

// evaluate computes every bar of specs from r.
func evaluate(r benchReport, specs []barSpec) []bar {
	var out []bar
	for _, s := range specs {
		b := bar{Figure: s.figure, Unit: s.unit, Limit: s.limit}
		v, detail, ok := s.value(r)
		switch {
		case !ok:
			b.Verdict = "n/a"
		case s.limit == 0:
			b.Value, b.Detail, b.Verdict = v, detail, "report"
		case v <= s.limit:
			b.Value, b.Detail, b.Verdict = v, detail, "PASS"
		default:
			b.Value, b.Detail, b.Verdict = v, detail, "FAIL"
		}
		out = append(out, b)
	}
	return out
}

// barsFailed counts the bars that failed.
func barsFailed(bars []bar) int {
	n := 0
	for _, b := range bars {
		if b.Verdict == "FAIL" {
			n++
		}
	}
	return n
}

// writeBars prints the bars as one table: figure, value, bar, verdict.
func writeBars(w io.Writer, bars []bar) {
	if len(bars) == 0 {
		return
	}
	fmt.Fprintf(w, "\nbars (issue 29's, re-based on go-floor -signals; issue 15's with -baseline), from the medians above\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  figure\tthis run\tbar\tverdict\tfrom")
	for _, b := range bars {
		value, limit := "n/a", "report it"
		if b.Verdict != "n/a" {
			value = num(b.Value) + " " + b.Unit
		}
		if b.Limit > 0 {
			limit = "≤ " + num(b.Limit) + " " + b.Unit
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.Figure, value, limit, b.Verdict, b.Detail)
	}
	tw.Flush()
}

// commas prints n with thousands separators: 10000 → "10,000".
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
