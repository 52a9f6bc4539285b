package main

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/withlock/withlock/locks/history"
)

// The history part of `withlock status` (SPEC §8): for named run ids the
// last start, result and success, the starts skipped since, and the last
// runs; for the whole dir one line per run id with a history.

// historyStatus is one run id's history in `status --json`. Times are
// epoch seconds (0: never), durations seconds.
type historyStatus struct {
	RunID         string           `json:"run_id"`
	File          string           `json:"file"`
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

// gatherHistory reads the history of the named run ids, or of every run id
// with a history file or a stale lock in the dir. A stale lock whose holder
// was a process is a run that ended unobserved (its withlock was killed):
// no record says so until the next run reclaims the lock and writes one.
func gatherHistory(dir string, named []string, st *statusReport) []historyStatus {
	ids := map[string]string{} // history file -> run id ("" until read)
	for _, id := range named {
		ids[history.File(dir, id)] = id
	}
	if len(named) == 0 {
		paths, _ := filepath.Glob(filepath.Join(dir, "*"+history.Suffix))
		for _, path := range paths {
			ids[path] = ""
		}
		for _, l := range st.Locks {
			if l.State == "stale" && l.Pid != 0 {
				ids[history.File(dir, l.RunID)] = l.RunID
			}
		}
	}
	out := []historyStatus{}
	for path, id := range ids {
		recs, skipped, err := history.Read(path)
		if err != nil {
			st.Errors = append(st.Errors, err.Error())
			continue
		}
		if id == "" && len(recs) > 0 {
			id = recs[0].RunID
		}
		running := 0.0 // when a run under way, which has no record yet, started
		for _, l := range st.Locks {
			if l.RunID == id && l.State == "held" {
				running = max(running, l.CreatedAt)
			}
			if l.RunID == id && l.State == "stale" && l.Pid != 0 {
				recs = append(recs, history.Record{Kind: history.KindRun, RunID: id, StartedAt: l.CreatedAt,
					Result: history.ResultUnobserved, Pid: l.Pid, Host: l.Host, FencingToken: l.FencingToken, Command: l.Command})
			}
		}
		if len(recs) > 0 || len(named) > 0 {
			hs := summarizeHistory(id, recs)
			hs.File, hs.SkippedLines, hs.LastStart = path, skipped, max(hs.LastStart, running)
			out = append(out, hs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out
}

func summarizeHistory(id string, recs []history.Record) historyStatus {
	s := history.Summarize(recs)
	hs := historyStatus{RunID: id, LastStart: s.LastStart, LastExitCode: -1, SkippedStarts: s.Skipped,
		RunsTotal: s.RunsTotal, Conflicts: s.Conflicts, Runs: []history.Record{}}
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

// writeHistory prints the history part of the human view.
func writeHistory(w io.Writer, st *statusReport, named bool) {
	if len(st.History) == 0 {
		return
	}
	if !named {
		fmt.Fprintf(w, "\nhistory (%d run ids):\n", len(st.History))
		t := newTable(w, "  RUN ID", "LAST START", "LAST RESULT", "LAST SUCCESS", "DURATION", "SKIPPED")
		for _, h := range st.History {
			t.row("  "+h.RunID, agoEpoch(st.Now, h.LastStart), orDash(outcome(h.last)), agoEpoch(st.Now, h.LastSuccess),
				durationOf(h.last), fmt.Sprint(h.SkippedStarts))
		}
		t.Flush()
		return
	}
	for _, h := range st.History {
		fmt.Fprintf(w, "\nhistory of %s:\n", h.RunID)
		fmt.Fprintf(w, "  last start:   %s\n", agoEpoch(st.Now, h.LastStart))
		fmt.Fprintf(w, "  last result:  %s, %s\n", orDash(outcome(h.last)), agoEpoch(st.Now, h.LastEnd))
		fmt.Fprintf(w, "  last success: %s\n", agoEpoch(st.Now, h.LastSuccess))
		fmt.Fprintf(w, "  duration:     %s\n", durationOf(h.last))
		fmt.Fprintf(w, "  skipped:      %d starts since the last run (%d refused in all)\n", h.SkippedStarts, h.Conflicts)
		if len(h.Runs) == 0 {
			continue
		}
		t := newTable(w, "  STARTED", "DURATION", "RESULT", "PID", "TOKEN", "COMMAND")
		for _, r := range h.Runs {
			t.row("  "+agoEpoch(st.Now, r.StartedAt), durationOf(r), outcome(r), fmt.Sprint(r.Pid), fmt.Sprint(r.FencingToken), orDash(r.Command))
		}
		t.Flush()
	}
}
