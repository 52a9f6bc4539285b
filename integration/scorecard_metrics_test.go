package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testprom"
)

// metricsPath is a PATH with withlock-metrics built into a dir of its own
// first: `withlock metrics` runs it.
func metricsPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "withlock-metrics"), "github.com/withlock/withlock/cmd/withlock-metrics").CombinedOutput()
	if err != nil {
		t.Fatalf("build withlock-metrics: %v\n%s", err, out)
	}
	return dir + ":" + os.Getenv("PATH")
}

// withlock metrics on the file backend: valid Prometheus text (promtool
// check metrics, the Python parser), the values the runs left — a run id
// with a past run and no lock, one held with a refused start — and a run
// id with a quote, a backslash and a newline escaped. Negative controls: a
// changed value and an unescaped newline are caught.
func TestScorecardMetricsParse(t *testing.T) {
	testprom.Require(t)
	dir := filepath.Join(t.TempDir(), "locks")
	weird := "we\"ird\\id\nx"
	env := append(testEnv(t), "PATH="+metricsPath(t))
	runIn := func(args ...string) outcome {
		out, err := execWithlock(withlockBin, env, time.Minute, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	runIn("run", "--dir", dir, weird, "--", "true")
	runIn("run", "--dir", dir, weird, "--", "sh", "-c", "exit 3")
	runIn("run", "--dir", dir, weird, "--timeout", "0.05", "--", "sleep", "5")
	started := filepath.Join(t.TempDir(), "started")
	holder := startProc(withlockBin, env, "run", "--dir", dir, "busy", "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
	defer holder.cmd.Process.Kill()
	if !waitForFile(started, 10*time.Second, holder.ended) {
		t.Fatal("holder did not start")
	}
	if out := runIn("run", "--dir", dir, "-q", "busy", "--", "true"); out.code != 75 {
		t.Fatalf("conflict: %+v", out)
	}
	// Two slots of a semaphore held: one run id, held once.
	for i := range 2 {
		slot := filepath.Join(t.TempDir(), "slot")
		p := startProc(withlockBin, env, "run", "--dir", dir, "--max", "2", "pool", "--", "sh", "-c", `touch "$0"; exec sleep 60`, slot)
		defer p.cmd.Process.Kill()
		if !waitForFile(slot, 10*time.Second, p.ended) {
			t.Fatalf("slot %d of pool did not start", i)
		}
	}
	out := runIn("metrics", "--dir", dir)
	if out.code != 0 || out.stderr != "" {
		t.Fatalf("metrics: %+v", out)
	}
	got := testprom.Parse(t, out.stdout)
	w, busy := map[string]string{"run_id": weird}, map[string]string{"run_id": "busy"}
	want := map[string]float64{
		testprom.Key("withlock_runs_total", map[string]string{"run_id": weird, "result": "exit"}):    2,
		testprom.Key("withlock_runs_total", map[string]string{"run_id": weird, "result": "timeout"}): 1,
		testprom.Key("withlock_last_exit_code", w):                                                   124,
		testprom.Key("withlock_conflicts_total", w):                                                  0,
		testprom.Key("withlock_conflicts_total", busy):                                               1,
		testprom.Key("withlock_held", map[string]string{"run_id": "busy", "holder_alive": "true"}):   1,
		testprom.Key("withlock_held", map[string]string{"run_id": weird, "holder_alive": "false"}):   0,
		testprom.Key("withlock_held", map[string]string{"run_id": "pool", "holder_alive": "true"}):   1,
	}
	recent := []string{testprom.Key("withlock_last_success_timestamp_seconds", w), testprom.Key("withlock_last_start_timestamp_seconds", w),
		testprom.Key("withlock_last_end_timestamp_seconds", w), testprom.Key("withlock_last_start_timestamp_seconds", busy)}
	for _, p := range testprom.Problems(got, want, recent...) {
		t.Error(p)
	}
	if d := got[testprom.Key("withlock_last_duration_seconds", w)]; d < 0.05 || d > 5 {
		t.Errorf("last duration %v, want the timeout's", d)
	}
	// busy's run has not ended: no last end, exit code or success.
	for _, name := range []string{"withlock_last_end_timestamp_seconds", "withlock_last_exit_code", "withlock_last_success_timestamp_seconds"} {
		if v, ok := got[testprom.Key(name, busy)]; ok {
			t.Errorf("%s of busy = %v; want none (its run has not ended)", name, v)
		}
	}

	// Negative controls: the checks catch a wrong value, and the parsers a
	// run id whose newline is not escaped.
	wrong := strings.Replace(out.stdout, `withlock_last_exit_code{run_id="we\"ird\\id\nx"} 124`, `withlock_last_exit_code{run_id="we\"ird\\id\nx"} 125`, 1)
	if wrong == out.stdout {
		t.Fatalf("the exit code line is not in the output:\n%s", out.stdout)
	}
	if p := testprom.Problems(testprom.Parse(t, wrong), want, recent...); len(p) != 1 || !strings.Contains(p[0], "withlock_last_exit_code") {
		t.Errorf("a changed exit code gave the problems %q; want that one", p)
	}
	if _, err := testprom.Check(strings.ReplaceAll(out.stdout, `id\nx`, "id\nx")); err == nil {
		t.Error("an unescaped newline in a label passed promtool and the Python parser")
	}

	// --textfile: the same metrics, renamed into place (no temp file left).
	prom := filepath.Join(t.TempDir(), "withlock.prom")
	if out := runIn("metrics", "--dir", dir, "--textfile", prom); out.code != 0 || out.stdout != "" {
		t.Fatalf("metrics --textfile: %+v", out)
	}
	data, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	if fromFile := testprom.Parse(t, string(data)); len(fromFile) != len(got) {
		t.Errorf("textfile has %d samples, stdout %d", len(fromFile), len(got))
	}
	if entries, _ := os.ReadDir(filepath.Dir(prom)); len(entries) != 1 {
		t.Errorf("textfile dir holds %d files, want only withlock.prom", len(entries))
	}
}

// Without withlock-metrics beside withlock or in PATH, withlock metrics
// exits 73 with one line that names where it looked, and writes nothing.
func TestScorecardMetricsMissingHelper(t *testing.T) {
	for _, installed := range []string{"/usr/bin/withlock-metrics", "/bin/withlock-metrics"} {
		if _, err := os.Stat(installed); err == nil {
			t.Skipf("%s is installed: withlock would find it in PATH=/usr/bin:/bin", installed)
		}
	}
	prom := filepath.Join(t.TempDir(), "withlock.prom")
	env := append(testEnv(t), "PATH=/usr/bin:/bin")
	out, err := execWithlock(withlockBin, env, time.Minute, "metrics", "--dir", t.TempDir(), "--textfile", prom)
	if err != nil {
		t.Fatal(err)
	}
	beside := filepath.Join(filepath.Dir(withlockBin), "withlock-metrics")
	want := "withlock: withlock-metrics is not installed at " + beside + " or in PATH (build it with: go build -o withlock-metrics ./cmd/withlock-metrics)\n"
	if out.code != 73 || out.stdout != "" || out.stderr != want {
		t.Errorf("metrics without withlock-metrics: exit %d, stdout %q, stderr %q; want 73 and %q", out.code, out.stdout, out.stderr, want)
	}
	if _, err := os.Stat(prom); err == nil {
		t.Error("the text file was written")
	}
}

// A history that cannot be read (here a directory where the file should
// be) is one line on stderr and exit 73, as for status; the metrics of
// what could be read are still written. Control: without it, exit 0.
func TestScorecardMetricsUnreadableHistory(t *testing.T) {
	testprom.Require(t)
	dir := filepath.Join(t.TempDir(), "locks")
	env := append(testEnv(t), "PATH="+metricsPath(t))
	if out, err := execWithlock(withlockBin, env, time.Minute, "run", "--dir", dir, "job", "--", "true"); err != nil || out.code != 0 {
		t.Fatalf("run: %+v %v", out, err)
	}
	prom := filepath.Join(t.TempDir(), "withlock.prom")
	metrics := func() outcome {
		out, err := execWithlock(withlockBin, env, time.Minute, "metrics", "--dir", dir, "--textfile", prom)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := metrics(); out.code != 0 || out.stderr != "" {
		t.Fatalf("metrics: %+v", out)
	}
	bad := filepath.Join(dir, strings.Repeat("0", 64)+".runs")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	out := metrics()
	if want := "withlock: metrics: read " + bad + ": is a directory\n"; out.code != 73 || out.stderr != want {
		t.Errorf("metrics with an unreadable history: exit %d, stderr %q; want 73 and %q", out.code, out.stderr, want)
	}
	data, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	job := testprom.Key("withlock_runs_total", map[string]string{"run_id": "job", "result": "exit"})
	if p := testprom.Problems(testprom.Parse(t, string(data)), map[string]float64{job: 1}); len(p) > 0 {
		t.Errorf("the text file: %q", p)
	}
}
