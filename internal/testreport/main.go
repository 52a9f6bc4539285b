// Command testreport reads a `go test -json` stream on stdin, prints a
// readable console view (one line per package, the output of failing tests),
// writes test-report.json and test-report.md, and exits 1 when any test
// failed or anything else went wrong (build failure, panic, failed step).
//
// Its last line is the plain "N passed, N failed, N skipped" that CI reads.
// See countingRule in report.go for what counts as a test.
//
//	go test -json ./... | testreport -out reports -step "go vet=0" -go-test-status reports/go-test.status
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// stepFlags collects repeated -step NAME=STATUS flags.
type stepFlags []step

func (s *stepFlags) String() string { return fmt.Sprint(*s) }

func (s *stepFlags) Set(v string) error {
	name, status, ok := strings.Cut(v, "=")
	n, err := strconv.Atoi(strings.TrimSpace(status))
	if !ok || name == "" || err != nil {
		return fmt.Errorf("want NAME=EXIT_STATUS, got %q", v)
	}
	*s = append(*s, step{name: name, status: n})
	return nil
}

type options struct {
	outDir       string
	steps        stepFlags
	goTestStatus string
	start        float64
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.outDir, "out", "reports", "directory for test-report.json and test-report.md")
	fs.Var(&o.steps, "step", "NAME=EXIT_STATUS of a step run before the tests (repeatable); non-zero counts as an error")
	fs.StringVar(&o.goTestStatus, "go-test-status", "", "file holding go test's exit status, written when the stream ends")
	fs.Float64Var(&o.start, "start", 0, "unix time (seconds) the whole run started; default: first event's time")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return o, nil
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseOptions(args, stderr)
	if err != nil {
		return 2
	}
	con := &console{w: stdout, printedBuild: map[string]bool{}}
	c := newCollector(con.packageDone)
	con.c = c
	readErr := readEvents(stdin, c.add, func(line string) {
		c.addText(line)
		fmt.Fprintln(stdout, line)
	})
	for _, name := range c.packageOrder { // packages the stream abandoned
		if p := c.packages[name]; p.action == "" {
			con.packageDone(p)
		}
	}
	r := assemble(c, opts.steps, readStatus(opts.goTestStatus), duration(opts.start, c))
	if readErr != nil {
		r.Problems = append(r.Problems, Problem{Kind: "input", Message: "reading the test stream: " + readErr.Error()})
		r.Errors = len(r.Problems)
	}
	mdPath, err := writeReports(opts.outDir, r)
	if err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		r.Errors++
	}
	writeSummary(stdout, r, mdPath)
	if r.Failed > 0 || r.Errors > 0 {
		return 1
	}
	return 0
}

// readStatus reads go test's exit status from path; nil when path is empty,
// -1 when it cannot be read.
func readStatus(path string) *int {
	if path == "" {
		return nil
	}
	status := -1
	if data, err := os.ReadFile(path); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			status = n
		}
	}
	return &status
}

func duration(start float64, c *collector) time.Duration {
	if start > 0 {
		return time.Since(time.Unix(0, int64(start*1e9)))
	}
	return c.last.Sub(c.first)
}

// writeReports writes test-report.json and test-report.md into dir and
// returns the markdown file's path.
func writeReports(dir string, r Report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create report dir: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode report: %w", err)
	}
	jsonPath := filepath.Join(dir, "test-report.json")
	mdPath := filepath.Join(dir, "test-report.md")
	var md strings.Builder
	writeMarkdown(&md, r)
	return mdPath, errors.Join(
		os.WriteFile(jsonPath, append(data, '\n'), 0o644),
		os.WriteFile(mdPath, []byte(md.String()), 0o644),
	)
}
