package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// runFixture feeds testdata/<name> through run and returns the exit status,
// the console output and the JSON report written.
func runFixture(t *testing.T, fixture string, extraArgs ...string) (int, string, Report) {
	t.Helper()
	in, err := os.Open(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"-out", out}, extraArgs...), in, &stdout, &stderr)
	if stderr.Len() > 0 {
		t.Errorf("unexpected stderr: %s", stderr.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "test-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(out, "test-report.md"))
	if err != nil || !bytes.HasPrefix(md, []byte("# Test report\n")) {
		t.Fatalf("markdown report missing or malformed: %v %q", err, md)
	}
	return code, stdout.String(), r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func problemKinds(r Report) []string {
	var kinds []string
	for _, p := range r.Problems {
		kinds = append(kinds, p.Kind)
	}
	return kinds
}

func TestFixtures(t *testing.T) {
	tests := []struct {
		fixture                 string
		passed, failed, skipped int
		kinds                   []string
		wantCode                int
	}{
		{"pass.json", 1, 0, 0, nil, 0},
		{"fail.json", 1, 1, 0, nil, 1},
		{"skip.json", 0, 0, 1, nil, 0},
		// TestParent/a and TestParentOwnFail/x pass, TestParent/b fails, TestParent/c is
		// skipped, TestParentOwnFail failed outside its subtests; TestParent is not counted.
		{"subtests.json", 2, 2, 1, nil, 1},
		// lib breaks lib and usebroken: one error; buildfail and vetfail one each.
		{"buildfail.json", 0, 0, 0, []string{"build failed", "build failed", "build failed"}, 1},
		// TestA passes, TestPanic fails, TestAfter never ran.
		{"panic.json", 1, 1, 0, []string{"panic"}, 1},
		{"exit.json", 1, 0, 0, []string{"package failed without a failing test"}, 1},
		// -count=3: TestOK and TestGood pass 3 times each, TestBad fails 3 times.
		{"count.json", 6, 3, 0, nil, 1},
		{"timeout.json", 0, 1, 0, []string{"panic"}, 1},
		{"truncated.json", 0, 1, 0, []string{"package did not finish"}, 1},
		{"nonjson.json", 1, 0, 0, nil, 0},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.fixture, ".json"), func(t *testing.T) {
			code, out, r := runFixture(t, tt.fixture)
			if r.Passed != tt.passed || r.Failed != tt.failed || r.Skipped != tt.skipped {
				t.Errorf("got %d passed, %d failed, %d skipped; want %d, %d, %d",
					r.Passed, r.Failed, r.Skipped, tt.passed, tt.failed, tt.skipped)
			}
			if r.Total != r.Passed+r.Failed+r.Skipped {
				t.Errorf("total %d is not passed+failed+skipped", r.Total)
			}
			if got := problemKinds(r); !slices.Equal(got, tt.kinds) {
				t.Errorf("errors %q, want %q", got, tt.kinds)
			}
			if r.Errors != len(tt.kinds) {
				t.Errorf("errors count %d, want %d", r.Errors, len(tt.kinds))
			}
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			want := strings.Join([]string{itoa(tt.passed) + " passed", itoa(tt.failed) + " failed", itoa(tt.skipped) + " skipped"}, ", ")
			if got := lastLine(out); got != want {
				t.Errorf("last line %q, want %q", got, want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestFailingOutputIsShown(t *testing.T) {
	_, out, r := runFixture(t, "fail.json")
	if !strings.Contains(out, "f_test.go:3: boom") {
		t.Errorf("console lacks the failing test's output:\n%s", out)
	}
	if strings.Contains(out, `"Action"`) {
		t.Errorf("console echoes the raw JSON stream:\n%s", out)
	}
	if len(r.Failures) != 1 || r.Failures[0].Test != "TestBad" || !slices.ContainsFunc(r.Failures[0].Output, func(s string) bool { return strings.Contains(s, "boom") }) {
		t.Errorf("report failures = %+v", r.Failures)
	}
}

func TestBuildFailureNamesAffectedPackages(t *testing.T) {
	_, out, r := runFixture(t, "buildfail.json")
	lib := r.Problems[0]
	if lib.Package != "example.com/m/lib" || !strings.Contains(lib.Message, "example.com/m/usebroken") {
		t.Errorf("first build problem = %+v", lib)
	}
	if !strings.Contains(out, "cannot use \"x\"") || !strings.Contains(out, "undefined: undefined") {
		t.Errorf("console lacks compiler output:\n%s", out)
	}
	if !strings.Contains(out, "wrong type string") {
		t.Errorf("console lacks go vet output from go test:\n%s", out)
	}
}

func TestSkipReasonAndCountingRuleInReport(t *testing.T) {
	_, _, r := runFixture(t, "skip.json")
	if len(r.Skips) != 1 || !strings.Contains(r.Skips[0].Note, "no flock here") {
		t.Errorf("skips = %+v", r.Skips)
	}
	if r.Counting == "" {
		t.Error("report does not state the counting rule")
	}
}

func TestSuccessRate(t *testing.T) {
	_, _, r := runFixture(t, "count.json")
	if r.SuccessRate == nil || *r.SuccessRate < 66.6 || *r.SuccessRate > 66.7 {
		t.Errorf("success rate = %v, want 6/9", r.SuccessRate)
	}
	_, _, r = runFixture(t, "buildfail.json")
	if r.SuccessRate != nil {
		t.Errorf("success rate with no test run = %v, want null", *r.SuccessRate)
	}
}

func TestFailedStepIsAnError(t *testing.T) {
	code, out, r := runFixture(t, "pass.json", "-step", "gofmt=0", "-step", "go vet=1")
	if code != 1 || !slices.Equal(problemKinds(r), []string{"step failed"}) {
		t.Errorf("code %d, errors %q; want 1 and one failed step", code, problemKinds(r))
	}
	if !strings.Contains(out, "go vet failed") || lastLine(out) != "1 passed, 0 failed, 0 skipped" {
		t.Errorf("console:\n%s", out)
	}
}

func TestGoTestStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, fixture, statusFile string
		kinds                     []string
		wantCode                  int
	}{
		{"zero", "pass.json", write("zero", "0\n"), nil, 0},
		// go test failing with nothing in the stream (e.g. no packages matched) is an error.
		{"unexplained", "pass.json", write("one", "1\n"), []string{"go test"}, 1},
		// a failure the stream explains is not counted twice.
		{"explained", "fail.json", write("one-again", "1\n"), nil, 1},
		{"missing", "pass.json", filepath.Join(dir, "absent"), []string{"go test"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, r := runFixture(t, tt.fixture, "-go-test-status", tt.statusFile)
			if code != tt.wantCode || !slices.Equal(problemKinds(r), tt.kinds) {
				t.Errorf("code %d, errors %q; want %d, %q", code, problemKinds(r), tt.wantCode, tt.kinds)
			}
		})
	}
}

func TestNonJSONLinesArePrintedAndKept(t *testing.T) {
	_, out, r := runFixture(t, "nonjson.json")
	if !strings.Contains(out, "go: downloading example.com/x v1.0.0") {
		t.Errorf("console lacks the non-JSON line:\n%s", out)
	}
	if len(r.UnparsedLines) != 1 {
		t.Errorf("unparsed lines = %q", r.UnparsedLines)
	}
}

func TestBadFlag(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"-step", "novalue"}, strings.NewReader(""), &bytes.Buffer{}, &stderr); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "NAME=EXIT_STATUS") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestTrimLinesKeepsHeadAndTail(t *testing.T) {
	var out []string
	for i := range headLines + tailLines + 50 {
		out = append(out, strconv.Itoa(i)+"\n")
	}
	got := trimLines(out)
	if len(got) != headLines+tailLines+1 || got[0] != "0\n" || got[len(got)-1] != out[len(out)-1] {
		t.Errorf("trimLines kept %d lines: first %q last %q", len(got), got[0], got[len(got)-1])
	}
	if !strings.Contains(got[headLines], "50 lines omitted") {
		t.Errorf("marker = %q", got[headLines])
	}
}
