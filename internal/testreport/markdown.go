package main

import (
	"fmt"
	"io"
	"strings"
)

// writeMarkdown renders r as reports/test-report.md.
func writeMarkdown(w io.Writer, r Report) {
	fmt.Fprintf(w, "# Test report\n\n")
	fmt.Fprintf(w, "| total | passed | failed | skipped | errors | success rate | duration |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %s | %s |\n\n", r.Total, r.Passed, r.Failed, r.Skipped, r.Errors, rateText(r.SuccessRate), seconds(r.DurationSeconds))
	fmt.Fprintf(w, "Counting: %s. Success rate = passed / (passed + failed). Errors are problems that are not a failing test: build failures, panics, packages that failed without a failing test, failed steps (gofmt, go vet).\n\n", r.Counting)
	writeProblemsMD(w, r.Problems)
	writeFailuresMD(w, r.Failures)
	writePackagesMD(w, r.Packages)
	writeSkipsMD(w, r.Skips)
	writeSlowestMD(w, r.Slowest)
	if len(r.UnparsedLines) > 0 {
		fmt.Fprintf(w, "## Lines that were not test events\n\n")
		writeBlock(w, r.UnparsedLines)
	}
}

func writeProblemsMD(w io.Writer, problems []Problem) {
	if len(problems) == 0 {
		return
	}
	fmt.Fprintf(w, "## Errors\n\n")
	for _, p := range problems {
		heading := p.Kind
		if p.Package != "" {
			heading += " (" + p.Package + ")"
		}
		fmt.Fprintf(w, "### %s\n\n%s\n\n", heading, p.Message)
		writeBlock(w, p.Output)
	}
}

func writeFailuresMD(w io.Writer, failures []TestResult) {
	if len(failures) == 0 {
		return
	}
	fmt.Fprintf(w, "## Failed tests\n\n")
	for _, f := range failures {
		fmt.Fprintf(w, "### %s `%s` (%s)%s\n\n", f.Package, f.Test, seconds(f.Elapsed), noteSuffix(f.Note))
		writeBlock(w, f.Output)
	}
}

func writePackagesMD(w io.Writer, packages []PackageResult) {
	fmt.Fprintf(w, "## Packages\n\n| package | result | passed | failed | skipped | time |\n|---|---|---:|---:|---:|---:|\n")
	for _, p := range packages {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %s |\n", p.Name, p.Status, p.Passed, p.Failed, p.Skipped, seconds(p.Elapsed))
	}
	fmt.Fprintln(w)
}

func writeSkipsMD(w io.Writer, skips []TestResult) {
	if len(skips) == 0 {
		return
	}
	fmt.Fprintf(w, "## Skipped tests\n\n| package | test | reason |\n|---|---|---|\n")
	for _, s := range skips {
		fmt.Fprintf(w, "| %s | `%s` | %s |\n", s.Package, s.Test, cell(s.Note))
	}
	fmt.Fprintln(w)
}

func writeSlowestMD(w io.Writer, tests []TestResult) {
	if len(tests) == 0 {
		return
	}
	fmt.Fprintf(w, "## Slowest tests\n\n| package | test | time |\n|---|---|---:|\n")
	for _, t := range tests {
		fmt.Fprintf(w, "| %s | `%s` | %s |\n", t.Package, t.Test, seconds(t.Elapsed))
	}
	fmt.Fprintln(w)
}

func writeBlock(w io.Writer, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "```\n")
	writeLines(w, "", lines)
	fmt.Fprintf(w, "```\n\n")
}

// cell makes text safe for one markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
