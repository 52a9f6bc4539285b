package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/history"
)

// The history of a run id in status: last start, result and success,
// skipped starts, the runs newest first, and a start whose withlock is gone
// as "ended unobserved"; the all-ids table has a line per run id.
func TestStatusHistory(t *testing.T) {
	r, scope, release := statusFixture(t)
	defer release()
	now := locks.Epoch(time.Now())
	path := history.File(r.Dir, "nightly")
	zero, three := 0, 3
	host, _ := os.Hostname()
	for _, rec := range []history.Record{
		{Run: history.Run{Kind: history.KindRun, RunID: "nightly", StartedAt: now - 7200, EndedAt: now - 7190, Result: history.ResultExit, ExitCode: &zero, Pid: 11, Host: host}},
		{Run: history.Run{Kind: history.KindRun, RunID: "nightly", StartedAt: now - 3600, EndedAt: now - 3500, Result: history.ResultExit, ExitCode: &three, Pid: 12, Host: host}},
		{Run: history.Run{Kind: history.KindRefused, RunID: "nightly"}, At: now - 3550},
		{Run: history.Run{Kind: history.KindRefused, RunID: "nightly"}, At: now - 30},
		{Run: history.Run{Kind: history.KindRefused, RunID: "nightly"}, At: now - 20},
	} {
		if err := history.Append(path, rec); err != nil {
			t.Fatal(err)
		}
	}
	// A withlock killed a minute ago left its lock, expired now: a run
	// that ended unobserved, until the next run reclaims it.
	stale := fmt.Sprintf(`{"run_id":"nightly","lock_id":"x","pid":999999999,"created_at":%v,"expires_at":%v,"host":%q,"command":"sleep 60"}`, now-60, now-30, host)
	if err := os.WriteFile(r.LockPath("nightly"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	st := gatherStatus(r, []string{"nightly"}, scope)
	if len(st.Locks) != 1 {
		t.Fatalf("locks %+v", st.Locks)
	}
	h := st.Locks[0].historyStatus
	if st.Locks[0].RunID != "nightly" || h.LastStart != now-60 || h.LastEnd != now-3500 || h.LastExitCode != 3 ||
		h.LastSuccess != now-7190 || h.SkippedStarts != 2 || h.Conflicts != 3 || h.LastDuration != 100 ||
		h.LastResult != "ended unobserved" || len(h.Runs) != 3 || h.Runs[0].Result != history.ResultUnobserved ||
		h.HistoryFile != path {
		t.Fatalf("history %+v", h)
	}
	var out bytes.Buffer
	writeStatusTable(&out, st)
	for _, want := range []string{"history of nightly:", "last start:   1m00s ago", "last success: 1h59m ago",
		"skipped:      2 starts since the last run (3 refused in all)", "last result:  ended unobserved, started 1m00s ago", "exit 3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}

	// All run ids: one table, the history in its LAST RESULT and LAST
	// SUCCESS columns; a run id with a history and no lock is free.
	if err := os.Remove(r.LockPath("nightly")); err != nil {
		t.Fatal(err)
	}
	if err := history.Append(history.File(r.Dir, "weekly"), history.Record{Run: history.Run{Kind: history.KindRun, RunID: "weekly",
		StartedAt: now - 100, EndedAt: now - 90, Result: history.ResultSignal, ExitCode: &three, Signal: "SIGTERM"}}); err != nil {
		t.Fatal(err)
	}
	st = gatherStatus(r, nil, scope)
	out.Reset()
	writeStatusTable(&out, st)
	text := out.String()
	lines := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			lines[f[0]] = line
		}
	}
	for id, want := range map[string][]string{
		"RUN":     {"LAST RESULT", "LAST SUCCESS", "COMMAND"},
		"job":     {"held", "sleep 60"},
		"nightly": {"free", "exit 3, 58m20s ago", "1h59m ago"},
		"weekly":  {"free", "signal SIGTERM, 1m30s ago", "never"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[id], w) {
				t.Errorf("row %s lacks %q:\n%s", id, w, text)
			}
		}
	}
	if strings.Contains(text, "history") {
		t.Errorf("status of all has a history part:\n%s", text)
	}
	if fields := strings.Fields(lines["job"]); fields[len(fields)-4] != "-" || fields[len(fields)-3] != "-" {
		t.Errorf("a lock without history has LAST RESULT and LAST SUCCESS -:\n%s", text)
	}
}

// A named run id holding a newline and a terminal escape is printed as its
// table row prints it, in the history's heading too: one line, no escape
// reaching the terminal.
func TestStatusHistoryHeadingIsOneLine(t *testing.T) {
	r, scope, release := statusFixture(t)
	defer release()
	id := "bad\nid\x1b[31mred"
	if err := history.Append(history.File(r.Dir, id), history.Record{Run: history.Run{Kind: history.KindRun, RunID: id,
		StartedAt: locks.Epoch(time.Now()) - 5, EndedAt: locks.Epoch(time.Now()), Result: history.ResultExit}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeStatusTable(&out, gatherStatus(r, []string{id}, scope))
	if strings.ContainsAny(out.String(), "\x1b") || !strings.Contains(out.String(), "history of bad id [31mred:\n") {
		t.Errorf("status of %q:\n%q", id, out.String())
	}
}
