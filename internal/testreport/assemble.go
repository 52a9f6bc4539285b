package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// step is a command run before the tests (gofmt, go vet) and its exit status.
type step struct {
	name   string
	status int
}

// assemble builds the report from everything collected. goTestStatus is the
// exit status of `go test` (-1 when unknown, nil when not given).
func assemble(c *collector, steps []step, goTestStatus *int, duration time.Duration) Report {
	r := Report{Counting: countingRule, DurationSeconds: duration.Seconds(), UnparsedLines: c.text}
	var timed []TestResult
	for _, name := range c.packageOrder {
		o := c.packages[name].outcome()
		r.Packages = append(r.Packages, o.result)
		r.Passed += o.result.Passed
		r.Failed += o.result.Failed
		r.Skipped += o.result.Skipped
		r.Failures = append(r.Failures, o.failures...)
		r.Skips = append(r.Skips, o.skips...)
		r.Problems = append(r.Problems, o.problems...)
		timed = append(timed, o.timed...)
	}
	r.Problems = append(r.Problems, buildProblems(c)...)
	r.Problems = append(r.Problems, stepProblems(steps)...)
	if goTestStatus != nil {
		r.Problems = append(r.Problems, goTestProblem(*goTestStatus, r)...)
	}
	r.Total = r.Passed + r.Failed + r.Skipped
	r.Errors = len(r.Problems)
	if ran := r.Passed + r.Failed; ran > 0 {
		rate := 100 * float64(r.Passed) / float64(ran)
		r.SuccessRate = &rate
	}
	r.Slowest = slowest(timed, 10)
	return r
}

// buildProblems reports each import path that failed to build once, naming
// the packages whose tests could not run because of it.
func buildProblems(c *collector) []Problem {
	affected := map[string][]string{}
	var order []string
	note := func(path string) {
		if _, ok := affected[path]; !ok {
			affected[path] = nil
			order = append(order, path)
		}
	}
	for _, path := range c.buildFailed {
		note(path)
	}
	for _, name := range c.packageOrder {
		if p := c.packages[name]; p.failedBuild != "" {
			note(p.failedBuild)
			affected[p.failedBuild] = append(affected[p.failedBuild], name)
		}
	}
	var problems []Problem
	for _, path := range order {
		msg := "did not compile (or go vet failed in go test)"
		if pkgs := affected[path]; len(pkgs) > 0 {
			sort.Strings(pkgs)
			msg += "; packages not tested: " + strings.Join(pkgs, ", ")
		}
		problems = append(problems, Problem{Kind: "build failed", Package: path, Message: msg, Output: trimLines(c.buildOutput[path])})
	}
	return problems
}

func stepProblems(steps []step) []Problem {
	var problems []Problem
	for _, s := range steps {
		if s.status != 0 {
			problems = append(problems, Problem{Kind: "step failed", Message: fmt.Sprintf("%s failed (exit status %d); its output is above", s.name, s.status)})
		}
	}
	return problems
}

// goTestProblem covers a `go test` that failed without saying why in the
// stream (for example no packages matched, or go.mod could not be loaded).
func goTestProblem(status int, r Report) []Problem {
	switch {
	case status < 0:
		return []Problem{{Kind: "go test", Message: "exit status of go test unknown"}}
	case status != 0 && r.Failed == 0 && len(r.Problems) == 0:
		return []Problem{{Kind: "go test", Message: fmt.Sprintf("go test exited %d without a failing test or build error in its output; see its messages above", status)}}
	}
	return nil
}
