package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/history"
)

// The history part of `withlock status` (SPEC §8): each lock entry carries
// its run id's history (the table's LAST RESULT and LAST SUCCESS); a run id
// with a history and no lock is listed as free; for named run ids the last
// start, result and success, the starts skipped since, and the last runs.

// historyStatus is a run id's history in a lock entry of `status --json`.
// Times are epoch seconds (0: never), durations seconds.
type historyStatus struct {
	HistoryFile   string           `json:"history_file"` // on etcd: the history's key prefix
	LastStart     float64          `json:"last_start"`
	LastEnd       float64          `json:"last_end"`
	LastResult    string           `json:"last_result"` // exit | signal | timeout | lock_lost | error | ended unobserved | ""
	LastExitCode  int              `json:"last_exit_code"`
	LastDuration  float64          `json:"last_duration_seconds"`
	LastSuccess   float64          `json:"last_success"`
	SkippedStarts int              `json:"skipped_starts"` // refused since the last start
	RunsTotal     map[string]int   `json:"runs_total"`
	Conflicts     int              `json:"conflicts_total"`
	Runs          []history.Record `json:"runs"` // the last 10, newest first
	SkippedLines  int              `json:"skipped_lines"`

	last history.Record // the last run: the last ended, or a newer one that ended unobserved
}

const shownRuns = 10

// runRecords is what status read of one run id's history.
type runRecords struct {
	where   string // the file (or etcd key prefix) it was read from
	recs    []history.Record
	skipped int
}

// fileHistories reads the history files of the named run ids (each one,
// with records or not, so that addHistory lists it), or when none were
// named every one in dir.
func fileHistories(dir string, st *statusReport) map[string]runRecords {
	byID := map[string]runRecords{}
	read := func(id, path string) {
		recs, skipped, err := history.Read(path)
		if err != nil {
			st.Errors = append(st.Errors, err.Error())
		}
		if id == "" && len(recs) > 0 {
			id = recs[0].RunID
		}
		if id != "" {
			byID[id] = runRecords{path, recs, skipped}
		}
	}
	for _, id := range st.named {
		read(id, history.File(dir, id))
	}
	if len(st.named) == 0 {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"+history.Suffix))
		for _, path := range paths {
			read("", path)
		}
	}
	return byID
}

// addHistory gives each lock entry its run id's history and lists a run id
// with a history but no lock as free (free makes its entry). A stale lock
// whose holder was a process is a run that ended unobserved (its withlock
// was killed): no record says so until the next run reclaims the lock and
// writes one; a held lock's run has no record yet, but its start.
func addHistory(st *statusReport, byID map[string]runRecords, free func(runID string) lockStatus) {
	running, locked := map[string]float64{}, map[string]bool{}
	for _, l := range st.Locks {
		h := byID[l.RunID]
		switch {
		case l.State == "held":
			running[l.RunID] = max(running[l.RunID], l.CreatedAt)
		case l.State == "stale" && l.Pid != 0:
			h.recs = append(h.recs, history.Record{Run: history.Run{Kind: history.KindRun, RunID: l.RunID, StartedAt: l.CreatedAt,
				Result: history.ResultUnobserved, Pid: l.Pid, Host: l.Host, FencingToken: l.FencingToken, Command: l.Command}})
		}
		byID[l.RunID], locked[l.RunID] = h, true
	}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		if !locked[id] {
			st.Locks = append(st.Locks, free(id))
		}
	}
	summaries := map[string]historyStatus{}
	for i := range st.Locks {
		id := st.Locks[i].RunID
		hs, done := summaries[id]
		if !done {
			hs = summarizeHistory(byID[id], running[id])
			summaries[id] = hs
		}
		st.Locks[i].historyStatus = hs
	}
}

// summarizeHistory is what status shows of h; running is when a run under
// way started (0: none).
func summarizeHistory(h runRecords, running float64) historyStatus {
	s := history.Summarize(h.recs)
	hs := historyStatus{HistoryFile: h.where, LastStart: max(s.LastStart, running), LastExitCode: -1, SkippedStarts: s.Skipped,
		RunsTotal: s.RunsTotal, Conflicts: s.Conflicts, Runs: []history.Record{}, SkippedLines: h.skipped}
	for i := len(s.Runs) - 1; i >= 0 && len(hs.Runs) < shownRuns; i-- {
		hs.Runs = append(hs.Runs, s.Runs[i])
	}
	if s.Last != nil {
		hs.LastEnd, hs.LastResult, hs.LastExitCode, hs.LastDuration = s.Last.EndedAt, s.Last.Result, *s.Last.ExitCode, s.Last.Duration()
		hs.last = *s.Last
	}
	if len(hs.Runs) > 0 && hs.Runs[0].Result == history.ResultUnobserved {
		hs.LastResult, hs.last = history.ResultUnobserved, hs.Runs[0]
	}
	if s.LastSuccess != nil {
		hs.LastSuccess = s.LastSuccess.EndedAt
	}
	return hs
}

// outcome is how a run ended, as a person reads it.
func outcome(r history.Record) string {
	switch {
	case r.ExitCode == nil:
	case r.Result == history.ResultExit:
		return fmt.Sprintf("exit %d", *r.ExitCode)
	case r.Result == history.ResultSignal:
		return "signal " + r.Signal
	case r.Result == history.ResultError:
		return "error: " + r.Message
	}
	return r.Result // timeout, lock_lost, ended unobserved
}

// lastColumns are the table's LAST RESULT and LAST SUCCESS of a lock entry.
func lastColumns(h historyStatus, now float64) (result, success string) {
	if len(h.Runs) == 0 && len(h.RunsTotal) == 0 && h.Conflicts == 0 {
		return "-", "-" // no history
	}
	result = cmp.Or(outcome(h.last), "-")
	if h.last.EndedAt > 0 {
		result += ", " + ago(now-h.last.EndedAt)
	}
	return result, agoEpoch(now, h.LastSuccess)
}

func agoEpoch(now, t float64) string {
	if t == 0 {
		return "never"
	}
	return ago(now - t)
}

func durationOf(r history.Record) string {
	if r.EndedAt == 0 {
		return "-"
	}
	return shortDuration(r.Duration())
}

// writeHistory prints the history of each named run id.
func writeHistory(w io.Writer, st *statusReport) {
	shown := map[string]bool{}
	for _, l := range st.Locks {
		if !slices.Contains(st.named, l.RunID) || shown[l.RunID] {
			continue
		}
		shown[l.RunID] = true
		h := l.historyStatus
		fmt.Fprintf(w, "\nhistory of %s:\n", locks.OneLine(l.RunID)) // as its table row
		fmt.Fprintf(w, "  last start:   %s\n", agoEpoch(st.Now, h.LastStart))
		when := agoEpoch(st.Now, h.LastEnd)
		if h.LastResult == history.ResultUnobserved {
			when = "started " + agoEpoch(st.Now, h.last.StartedAt) // its end was not seen; LastEnd is an earlier run's
		}
		fmt.Fprintf(w, "  last result:  %s, %s\n", cmp.Or(outcome(h.last), "-"), when)
		fmt.Fprintf(w, "  last success: %s\n", agoEpoch(st.Now, h.LastSuccess))
		fmt.Fprintf(w, "  duration:     %s\n", durationOf(h.last))
		fmt.Fprintf(w, "  skipped:      %d starts since the last run (%d refused in all)\n", h.SkippedStarts, h.Conflicts)
		if len(h.Runs) == 0 {
			continue
		}
		t := newTable(w, "  STARTED", "DURATION", "RESULT", "PID", "TOKEN", "COMMAND")
		for _, r := range h.Runs {
			t.row("  "+agoEpoch(st.Now, r.StartedAt), durationOf(r), outcome(r), fmt.Sprint(r.Pid), fmt.Sprint(r.FencingToken), cmp.Or(r.Command, "-"))
		}
		t.Flush()
	}
}
