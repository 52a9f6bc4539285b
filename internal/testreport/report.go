package main

import (
	"fmt"
	"sort"
	"strings"
)

// countingRule is stated in every report so a reader knows what a "test" is.
const countingRule = "one test per leaf: a test without subtests, or a subtest; " +
	"a parent test counts only when it failed while none of its subtests did; " +
	"a test that started but never finished (panic, timeout) counts as failed; " +
	"with -count=N every run counts"

// Report is what reports/test-report.json holds.
type Report struct {
	Total           int             `json:"total"`
	Passed          int             `json:"passed"`
	Failed          int             `json:"failed"`
	Skipped         int             `json:"skipped"`
	Errors          int             `json:"errors"`
	SuccessRate     *float64        `json:"success_rate_percent"` // passed/(passed+failed); null when neither
	DurationSeconds float64         `json:"duration_seconds"`
	Counting        string          `json:"counting"`
	Packages        []PackageResult `json:"packages"`
	Failures        []TestResult    `json:"failures"`
	Problems        []Problem       `json:"errors_detail"`
	Skips           []TestResult    `json:"skips"`
	Slowest         []TestResult    `json:"slowest"`
	UnparsedLines   []string        `json:"unparsed_lines,omitempty"`
}

// PackageResult summarises one package.
type PackageResult struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"` // pass, fail, build failed, no test files, did not finish
	Elapsed float64 `json:"elapsed_seconds"`
	Passed  int     `json:"passed"`
	Failed  int     `json:"failed"`
	Skipped int     `json:"skipped"`
}

// TestResult is one counted test that failed or was skipped (or is among the slowest).
type TestResult struct {
	Package string   `json:"package"`
	Test    string   `json:"test"`
	Elapsed float64  `json:"elapsed_seconds"`
	Note    string   `json:"note,omitempty"`
	Output  []string `json:"output,omitempty"`
}

// Problem is an error that is not a failing test: a build failure, a panic,
// a package that failed without a failing test, a failed step.
type Problem struct {
	Kind    string   `json:"kind"`
	Package string   `json:"package,omitempty"`
	Message string   `json:"message"`
	Output  []string `json:"output,omitempty"`
}

// packageOutcome is the counted view of one finished (or abandoned) package.
type packageOutcome struct {
	result   PackageResult
	failures []TestResult
	skips    []TestResult
	timed    []TestResult
	problems []Problem
}

// outcome applies the counting rule to p.
func (p *packageState) outcome() packageOutcome {
	o := packageOutcome{result: PackageResult{Name: p.name, Elapsed: p.elapsed, Status: p.status()}}
	for _, name := range p.testOrder {
		p.countTest(p.tests[name], &o)
	}
	if pr, ok := p.panicProblem(); ok {
		o.problems = append(o.problems, pr)
	} else if p.action == "fail" && p.failedBuild == "" && o.result.Failed == 0 {
		o.problems = append(o.problems, Problem{
			Kind: "package failed without a failing test", Package: p.name,
			Message: "the test binary exited non-zero (TestMain, os.Exit or a crash outside tests)",
			Output:  trimLines(p.output),
		})
	}
	if p.action == "" {
		o.problems = append(o.problems, Problem{
			Kind: "package did not finish", Package: p.name,
			Message: "the stream ended before the package reported a result",
			Output:  trimLines(p.output),
		})
	}
	return o
}

func (p *packageState) status() string {
	switch {
	case p.failedBuild != "":
		return "build failed"
	case p.action == "":
		return "did not finish"
	case p.action == "skip":
		return "no test files"
	}
	return p.action
}

func (p *packageState) countTest(t *testState, o *packageOutcome) {
	res := TestResult{Package: p.name, Test: t.name, Elapsed: t.elapsed}
	o.timed = append(o.timed, res)
	failed := t.failed
	if t.running {
		failed++
		res.Note = "did not finish"
	}
	if p.hasSubtests(t.name) {
		if failed == 0 || p.descendantFailed(t.name) {
			return
		}
		res.Note = strings.TrimPrefix(res.Note+"; failed outside its subtests", "; ")
	} else {
		o.result.Passed += t.passed
		o.result.Skipped += t.skipped
		if t.skipped > 0 {
			o.skips = append(o.skips, TestResult{Package: p.name, Test: t.name, Note: skipReason(t.output)})
		}
	}
	if failed > 0 {
		o.result.Failed += failed
		if runs := t.passed + t.failed + t.skipped; runs > 1 {
			res.Note = strings.TrimPrefix(res.Note+fmt.Sprintf("; %d of %d runs failed", t.failed, runs), "; ")
		}
		res.Output = trimLines(t.output)
		o.failures = append(o.failures, res)
	}
}

// panicProblem finds the first "panic: " line of the package (test binary crash or timeout).
func (p *packageState) panicProblem() (Problem, bool) {
	outputs := [][]string{p.output}
	for _, name := range p.testOrder {
		outputs = append(outputs, p.tests[name].output)
	}
	for _, out := range outputs {
		for i, line := range out {
			if strings.HasPrefix(line, "panic: ") {
				return Problem{
					Kind: "panic", Package: p.name,
					Message: strings.TrimSpace(strings.TrimPrefix(line, "panic: ")) + " (tests after it in this package did not run)",
					Output:  trimLines(out[i:]),
				}, true
			}
		}
	}
	return Problem{}, false
}

// skipReason is the test's own output without the === / --- framing lines.
func skipReason(output []string) string {
	var parts []string
	for _, line := range output {
		s := strings.TrimSpace(line)
		if s == "" || strings.HasPrefix(s, "=== ") || strings.HasPrefix(s, "--- ") {
			continue
		}
		parts = append(parts, s)
	}
	reason := strings.Join(parts, "; ")
	if len(reason) > 300 {
		reason = reason[:300] + "…"
	}
	return reason
}

// Output caps: keep the head and tail of long output.
const (
	headLines = 60
	tailLines = 240
)

// trimLines keeps the first headLines and last tailLines of out.
func trimLines(out []string) []string {
	if len(out) <= headLines+tailLines {
		return append([]string(nil), out...)
	}
	kept := append([]string(nil), out[:headLines]...)
	kept = append(kept, fmt.Sprintf("… %d lines omitted …\n", len(out)-headLines-tailLines))
	return append(kept, out[len(out)-tailLines:]...)
}

// slowest returns the n slowest tests or subtests, slowest first.
func slowest(all []TestResult, n int) []TestResult {
	sorted := append([]TestResult(nil), all...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Elapsed > sorted[j].Elapsed })
	if len(sorted) > n {
		sorted = sorted[:n]
	}
	return sorted
}
