package integration

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// metricsPath is a PATH with withlock-metrics built into a dir of its own
// first: `withlock metrics` execs it.
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

// parseProm parses the Prometheus text format with Debian's
// python3-prometheus-client and returns "name{labels}" -> value.
func parseProm(t *testing.T, text string) map[string]float64 {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	script := `
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out[s.name + json.dumps(s.labels, sort_keys=True)] = s.value
print(json.dumps(out))
`
	if err := exec.Command(py, "-c", "import prometheus_client").Run(); err != nil {
		t.Skipf("python3-prometheus-client is not installed (.ci/run installs it): %v", err)
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Prometheus parser refused the output: %v\n%s", err, text)
	}
	var samples map[string]float64
	if err := json.Unmarshal(out, &samples); err != nil {
		t.Fatal(err)
	}
	return samples
}

func sample(name string, labels map[string]string) string {
	b, _ := json.Marshal(labels) // sorted keys, as Python's sort_keys
	return name + strings.ReplaceAll(strings.ReplaceAll(string(b), `":`, `": `), `,"`, `, "`)
}

// withlock metrics: valid Prometheus text, the values the runs left, and a
// run id with a quote, a backslash and a newline escaped.
func TestScorecardMetricsParse(t *testing.T) {
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
	out := runIn("metrics", "--dir", dir)
	if out.code != 0 {
		t.Fatalf("metrics: %+v", out)
	}
	got := parseProm(t, out.stdout)
	w := map[string]string{"run_id": weird}
	for key, want := range map[string]float64{
		sample("withlock_runs_total", map[string]string{"run_id": weird, "result": "exit"}):    2,
		sample("withlock_runs_total", map[string]string{"run_id": weird, "result": "timeout"}): 1,
		sample("withlock_last_exit_code", w):                                                   124,
		sample("withlock_conflicts_total", w):                                                  0,
		sample("withlock_conflicts_total", map[string]string{"run_id": "busy"}):                1,
		sample("withlock_held", map[string]string{"run_id": "busy", "holder_alive": "true"}):   1,
		sample("withlock_held", map[string]string{"run_id": weird, "holder_alive": "false"}):   0,
	} {
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, want)
		}
	}
	now := float64(time.Now().Unix())
	if v := got[sample("withlock_last_success_timestamp_seconds", w)]; v < now-60 || v > now+1 {
		t.Errorf("last success %v, now %v", v, now)
	}
	if v := got[sample("withlock_last_start_timestamp_seconds", map[string]string{"run_id": "busy"})]; v < now-60 || v > now+1 {
		t.Errorf("busy's last start %v, now %v", v, now)
	}
	if d := got[sample("withlock_last_duration_seconds", w)]; d < 0.05 || d > 5 {
		t.Errorf("last duration %v, want the timeout's", d)
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
	if fromFile := parseProm(t, string(data)); len(fromFile) != len(got) {
		t.Errorf("textfile has %d samples, stdout %d", len(fromFile), len(got))
	}
	if entries, _ := os.ReadDir(filepath.Dir(prom)); len(entries) != 1 {
		t.Errorf("textfile dir holds %d files, want only withlock.prom", len(entries))
	}
}
