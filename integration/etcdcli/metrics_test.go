//go:build etcd

package etcdcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testprom"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestMetrics: `withlock metrics --backend etcd` — the default withlock,
// which hands it to withlock-etcd, which builds status's report and runs
// withlock-metrics beside it — writes the history kept in etcd as the file
// backend's metrics: valid for promtool check metrics and the Python
// parser, the values the runs left (a run id with past runs and no lock,
// one held with a refused start), a run id with a quote, a backslash and a
// newline escaped, and --textfile. Negative control: a changed value is
// caught. Completion offers the run ids of both, from etcd.
func TestMetrics(t *testing.T) {
	testprom.Require(t)
	s := etcdtest.Start(t, etcdtest.Options{})
	weird := "we\"ird\\id\nx"
	if r := run(t, wl(t, s, weird, "--", "true")); r.code != 0 {
		t.Fatalf("run true: %d %s", r.code, r.stderr)
	}
	if r := run(t, wl(t, s, weird, "--", "sh", "-c", "exit 3")); r.code != 3 {
		t.Fatalf("run exit 3: %d %s", r.code, r.stderr)
	}
	if r := run(t, wl(t, s, "job", "--", "true")); r.code != 0 {
		t.Fatalf("run job: %d %s", r.code, r.stderr)
	}
	pidFile := filepath.Join(t.TempDir(), "child")
	start(t, wl(t, s, "busy", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	readPid(t, pidFile)
	if r := run(t, wl(t, s, "-q", "busy", "--", "true")); r.code != 75 {
		t.Fatalf("refused start: %d %s", r.code, r.stderr)
	}

	m := run(t, admin(t, s, "metrics"))
	if m.code != 0 || m.stderr != "" {
		t.Fatalf("metrics --backend etcd: exit %d, stderr %q", m.code, m.stderr)
	}
	got := testprom.Parse(t, m.stdout)
	w, busy := map[string]string{"run_id": weird}, map[string]string{"run_id": "busy"}
	want := map[string]float64{
		testprom.Key("withlock_runs_total", map[string]string{"run_id": weird, "result": "exit"}):  2,
		testprom.Key("withlock_last_exit_code", w):                                                 3,
		testprom.Key("withlock_conflicts_total", w):                                                0,
		testprom.Key("withlock_conflicts_total", busy):                                             1,
		testprom.Key("withlock_held", map[string]string{"run_id": "busy", "holder_alive": "true"}): 1,
		testprom.Key("withlock_held", map[string]string{"run_id": weird, "holder_alive": "false"}): 0,
		testprom.Key("withlock_runs_total", map[string]string{"run_id": "job", "result": "exit"}):  1,
		testprom.Key("withlock_last_exit_code", map[string]string{"run_id": "job"}):                0,
	}
	recent := []string{testprom.Key("withlock_last_success_timestamp_seconds", w), testprom.Key("withlock_last_end_timestamp_seconds", w),
		testprom.Key("withlock_last_start_timestamp_seconds", w), testprom.Key("withlock_last_start_timestamp_seconds", busy)}
	for _, p := range testprom.Problems(got, want, recent...) {
		t.Error(p)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", m.stdout)
	}
	wrong := strings.Replace(m.stdout, `withlock_conflicts_total{run_id="busy"} 1`, `withlock_conflicts_total{run_id="busy"} 2`, 1)
	if p := testprom.Problems(testprom.Parse(t, wrong), want, recent...); wrong == m.stdout || len(p) != 1 || !strings.Contains(p[0], "withlock_conflicts_total") {
		t.Errorf("a changed conflict count gave the problems %q; want that one", p)
	}

	prom := filepath.Join(t.TempDir(), "withlock.prom")
	if r := run(t, admin(t, s, "metrics", "--textfile", prom)); r.code != 0 || r.stdout != "" {
		t.Fatalf("metrics --textfile: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	if p := testprom.Problems(testprom.Parse(t, string(data)), want, recent...); len(p) > 0 {
		t.Errorf("the text file: %q", p)
	}

	// Completion (what the shell scripts ask): the run ids in etcd, the
	// one with only a history too.
	c := run(t, admin(t, s, "status", "--generate-shell-completion"))
	if c.code != 0 || !strings.Contains(c.stdout, "busy:held\n") || !strings.Contains(c.stdout, "job:free\n") {
		t.Errorf("completion of status --backend etcd: exit %d, stdout %q, stderr %q; want busy:held and job:free", c.code, c.stdout, c.stderr)
	}
	// With etcd down a Tab offers nothing, and not after the 5 s of the
	// default dial timeout: completion bounds it to 1 s. Compared with the
	// same completion given --etcd-dial-timeout 5s (which it keeps), so that
	// the start-up both pay (a race build, a loaded machine) cancels out.
	took := map[string]time.Duration{}
	for _, dial := range []string{"", "5s"} {
		args := []string{"status", "--backend", "etcd", "--endpoints", "http://127.0.0.1:1"}
		if dial != "" {
			args = append(args, "--etcd-dial-timeout", dial)
		}
		cmd := exec.Command(withlock, append(args, "--generate-shell-completion")...)
		cmd.Env = cleanEnv()
		r := run(t, cmd)
		if r.stdout != "" {
			t.Errorf("completion with etcd down (dial %q): stdout %q, want nothing", dial, r.stdout)
		}
		took[dial] = r.took
	}
	if took["5s"] < 4900*time.Millisecond || took["5s"]-took[""] < 3*time.Second {
		t.Errorf("completion with etcd down took %v, and %v given --etcd-dial-timeout 5s; want 1 s against 5 s", took[""], took["5s"])
	}
}
