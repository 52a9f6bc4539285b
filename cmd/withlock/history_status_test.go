package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/history"
)

// The history of a run id in status: last start, result and success,
// skipped starts, the runs newest first, and a start whose withlock is gone
// as "ended unobserved"; the all-ids table has a line per run id.
func TestStatusHistory(t *testing.T) {
	r, scope, release := statusFixture(t)
	defer release()
	now := history.Epoch(time.Now())
	path := history.File(r.Dir, "nightly")
	zero, three := 0, 3
	host, _ := os.Hostname()
	for _, rec := range []history.Record{
		{Kind: history.KindRun, RunID: "nightly", StartedAt: now - 7200, EndedAt: now - 7190, Result: history.ResultExit, ExitCode: &zero, Pid: 11, Host: host},
		{Kind: history.KindRun, RunID: "nightly", StartedAt: now - 3600, EndedAt: now - 3500, Result: history.ResultExit, ExitCode: &three, Pid: 12, Host: host},
		{Kind: history.KindRefused, RunID: "nightly", At: now - 3550},
		{Kind: history.KindRefused, RunID: "nightly", At: now - 30},
		{Kind: history.KindRefused, RunID: "nightly", At: now - 20},
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
	if len(st.History) != 1 {
		t.Fatalf("history %+v", st.History)
	}
	h := st.History[0]
	if h.RunID != "nightly" || h.LastStart != now-60 || h.LastEnd != now-3500 || h.LastExitCode != 3 ||
		h.LastSuccess != now-7190 || h.SkippedStarts != 2 || h.Conflicts != 3 || h.LastDuration != 100 ||
		h.LastResult != "ended unobserved" || len(h.Runs) != 3 || h.Runs[0].Result != history.ResultUnobserved {
		t.Fatalf("history %+v", h)
	}
	var out bytes.Buffer
	writeStatusTable(&out, st)
	for _, want := range []string{"history of nightly:", "last start:   1m00s ago", "last success: 1h59m ago",
		"skipped:      2 starts since the last run (3 refused in all)", "ended unobserved", "exit 3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	writeStatusTable(&out, gatherStatus(r, nil, scope))
	if !strings.Contains(out.String(), "LAST RESULT") || !strings.Contains(out.String(), "nightly") {
		t.Errorf("status of all lacks the history table:\n%s", out.String())
	}
}
