package main

import (
	"fmt"
	"io"
	"strings"
)

// console prints progress as packages finish: one line per package and, for
// a failing one, the output of its failing tests and of its build errors.
// The raw JSON stream stays in the file the Makefile tees it to.
type console struct {
	w            io.Writer
	c            *collector
	printedBuild map[string]bool
}

func (con *console) packageDone(p *packageState) {
	o := p.outcome()
	fmt.Fprintf(con.w, "%-5s %-55s %s\n", packageMark(o.result.Status), p.name, packageLine(o.result))
	if p.failedBuild != "" {
		con.buildOutput(p.failedBuild)
	}
	for _, f := range o.failures {
		fmt.Fprintf(con.w, "    --- %s (%s)%s\n", f.Test, seconds(f.Elapsed), noteSuffix(f.Note))
		writeLines(con.w, "    ", f.Output)
	}
	for _, pr := range o.problems {
		fmt.Fprintf(con.w, "    !!! %s\n", problemLine(pr))
		if pr.Kind != "panic" || len(o.failures) == 0 { // a test's panic is already in its output
			writeLines(con.w, "    ", pr.Output)
		}
	}
}

// buildOutput prints the compiler's output for path once; packages that
// failed because of the same broken import path point back to it.
func (con *console) buildOutput(path string) {
	if con.printedBuild[path] {
		fmt.Fprintf(con.w, "    (build of %s failed: output above)\n", path)
		return
	}
	con.printedBuild[path] = true
	writeLines(con.w, "    ", con.c.buildOutput[path])
}

func packageMark(status string) string {
	switch status {
	case "pass":
		return "ok"
	case "no test files":
		return "?"
	}
	return "FAIL"
}

func packageLine(r PackageResult) string {
	switch r.Status {
	case "build failed", "no test files", "did not finish":
		return r.Status
	}
	line := fmt.Sprintf("%7s  %d passed", seconds(r.Elapsed), r.Passed)
	if r.Failed > 0 {
		line += fmt.Sprintf(", %d failed", r.Failed)
	}
	if r.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", r.Skipped)
	}
	return line
}

// writeSummary ends the console output. Its last line is the plain
// "N passed, N failed, N skipped" that CI reads.
func writeSummary(w io.Writer, r Report, reportPath string) {
	if len(r.Failures) > 0 || len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nnot passing:")
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  FAIL  %s %s%s\n", f.Package, f.Test, noteSuffix(f.Note))
		}
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  ERROR %s\n", problemLine(p))
		}
	}
	fmt.Fprintf(w, "\ntests: %d total, %d errors, success rate %s, %s; report: %s\n",
		r.Total, r.Errors, rateText(r.SuccessRate), seconds(r.DurationSeconds), reportPath)
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", r.Passed, r.Failed, r.Skipped)
}

func problemLine(p Problem) string {
	if p.Package == "" {
		return p.Kind + ": " + p.Message
	}
	return p.Kind + " (" + p.Package + "): " + p.Message
}

func writeLines(w io.Writer, indent string, lines []string) {
	for _, line := range lines {
		fmt.Fprint(w, indent+strings.TrimRight(line, "\n")+"\n")
	}
}

func noteSuffix(note string) string {
	if note == "" {
		return ""
	}
	return " [" + note + "]"
}

func seconds(s float64) string { return fmt.Sprintf("%.2fs", s) }

func rateText(rate *float64) string {
	if rate == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", *rate)
}
