//go:build etcd

package etcdcli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestHistory: on --backend etcd every run leaves its record and every
// refused start its count, kept in etcd (SPEC §8); status shows them as
// on the file backend: LAST RESULT and LAST SUCCESS in the table (a run id
// with a history and no lock is free), the runs with status RUN_ID, the
// same fields in --json.
func TestHistory(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	if r := run(t, wl(t, s, "job", "--", "true")); r.code != 0 {
		t.Fatalf("run true: %d %s", r.code, r.stderr)
	}
	if r := run(t, wl(t, s, "job", "--", "sh", "-c", "exit 3")); r.code != 3 || r.stderr != "" {
		t.Fatalf("run exit 3: %d %q", r.code, r.stderr)
	}
	pidFile := filepath.Join(t.TempDir(), "child")
	holder := start(t, wl(t, s, "other", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	readPid(t, pidFile)
	if r := run(t, wl(t, s, "-q", "other", "--", "true")); r.code != 75 {
		t.Fatalf("refused start: %d %s", r.code, r.stderr)
	}

	all := run(t, admin(t, s, "status"))
	for _, want := range []string{"LAST RESULT", "LAST SUCCESS"} {
		if !strings.Contains(all.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, all.stdout)
		}
	}
	row := func(id string) string {
		for _, line := range strings.Split(all.stdout, "\n") {
			if strings.HasPrefix(line, id+" ") {
				return line
			}
		}
		return ""
	}
	if r := row("job"); all.code != 0 || !strings.Contains(r, "free") || !strings.Contains(r, "exit 3, ") || !strings.Contains(r, " ago") {
		t.Errorf("status: exit %d, job's row %q:\n%s%s", all.code, r, all.stdout, all.stderr)
	}
	if r := row("other"); !strings.Contains(r, "held") {
		t.Errorf("other's row %q:\n%s", r, all.stdout)
	}
	named := run(t, admin(t, s, "status", "job", "other"))
	for _, want := range []string{"history of job:", "last result:  exit 3", "exit 0", "history of other:", "1 starts since the last run (1 refused in all)"} {
		if named.code != 0 || !strings.Contains(named.stdout, want) {
			t.Errorf("status job other: exit %d, lacks %q:\n%s%s", named.code, want, named.stdout, named.stderr)
		}
	}
	js := run(t, admin(t, s, "status", "--json", "job"))
	var doc struct {
		Locks []struct {
			RunID       string         `json:"run_id"`
			LastResult  string         `json:"last_result"`
			LastExit    int            `json:"last_exit_code"`
			LastSuccess float64        `json:"last_success"`
			RunsTotal   map[string]int `json:"runs_total"`
			Runs        []struct {
				Pid          int    `json:"pid"`
				FencingToken uint64 `json:"fencing_token"`
				Command      string `json:"command"`
			} `json:"runs"`
		}
	}
	if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil || len(doc.Locks) != 1 {
		t.Fatalf("status --json job: %v\n%s", err, js.stdout)
	}
	if l := doc.Locks[0]; l.LastResult != "exit" || l.LastExit != 3 || l.LastSuccess == 0 || l.RunsTotal["exit"] != 2 ||
		len(l.Runs) != 2 || l.Runs[0].Pid == 0 || l.Runs[0].FencingToken <= l.Runs[1].FencingToken || l.Runs[0].Command != "sh -c exit 3" {
		t.Errorf("status --json job: %+v", l)
	}
	holder.cmd.Process.Kill()
}

// TestKilledRunEndsUnobserved: a run whose withlock is SIGKILLed leaves
// its record on etcd too (SPEC §8), "ended unobserved", once its lease
// is gone; while it runs it is the holder, not a record; the next run's
// record follows it.
func TestKilledRunEndsUnobserved(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	pidFile := filepath.Join(t.TempDir(), "child")
	holder := start(t, wl(t, s, "--ttl", "2", "job", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	child := readPid(t, pidFile)
	type entry struct {
		State      string         `json:"state"`
		LastResult string         `json:"last_result"`
		RunsTotal  map[string]int `json:"runs_total"`
		Runs       []struct {
			Pid          int    `json:"pid"`
			Result       string `json:"result"`
			FencingToken uint64 `json:"fencing_token"`
			Command      string `json:"command"`
		} `json:"runs"`
	}
	status := func() entry {
		t.Helper()
		r := run(t, admin(t, s, "status", "--json", "job"))
		var doc struct{ Locks []entry }
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Locks) != 1 || r.code != 0 {
			t.Fatalf("status --json job: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		return doc.Locks[0]
	}
	if e := status(); e.State != "held" || len(e.Runs) != 0 || e.LastResult != "" {
		t.Errorf("the run under way, in status: %+v", e)
	}
	holder.cmd.Process.Kill()
	if r := holder.wait(t, runDeadline); r.code != 137 {
		t.Fatalf("withlock killed: exit %d", r.code)
	}
	waitFor(t, 30*time.Second, "the lease to end", func() bool { return status().State == "free" })
	e := status()
	if e.LastResult != "ended unobserved" || len(e.Runs) != 1 || e.Runs[0].Pid != holder.cmd.Process.Pid || e.Runs[0].FencingToken == 0 ||
		e.Runs[0].Command != `sh -c echo $$ > "$0"; exec sleep 600 `+pidFile {
		t.Errorf("after the lease ended: %+v", e)
	}
	waitFor(t, 10*time.Second, "the command's end", func() bool { return gone(child) })
	if r := run(t, wl(t, s, "job", "--", "true")); r.code != 0 {
		t.Fatalf("the next run: %d %s", r.code, r.stderr)
	}
	if e := status(); len(e.Runs) != 2 || e.Runs[0].Result != "exit" || e.Runs[1].Result != "ended unobserved" ||
		e.RunsTotal["exit"] != 1 || e.RunsTotal["ended unobserved"] != 1 {
		t.Errorf("after the next run: %+v", e)
	}
}
