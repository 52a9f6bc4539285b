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
	RunID         string         `json:"run_id"`
	File          string         `json:"file"`
	LastStart     float64        `json:"last_start"`
	LastEnd       float64        `json:"last_end"`
	LastResult    string         `json:"last_result"` // exit | signal | timeout | lock_lost | error | ended unobserved | ""
	LastExitCode  int            `json:"last_exit_code"`
	LastDuration  float64        `json:"last_duration_seconds"`
	LastSuccess   float64        `json:"last_success"`
	SkippedStarts int            `json:"skipped_starts"` // refused since the last start
	RunsTotal     map[string]int `json:"runs_total"`
	Conflicts     int            `json:"conflicts_total"`
	Runs          []runStatus    `json:"runs"` // the last 10, newest first
	SkippedLines  int            `json:"skipped_lines"`
}

// runStatus is one run: its record, and its state (ended, running, or
// ended unobserved: started, and its withlock gone without a record).
type runStatus struct {
	history.Record
	State string `json:"state"`
}

const shownRuns = 10

// gatherHistory reads the history of the named run ids, or of every run id
// with a history file in the dir.
func gatherHistory(dir string, named []string, st *statusReport) []historyStatus {
	var paths []string
	for _, id := range named {
		paths = append(paths, history.File(dir, id))
	}
	if len(named) == 0 {
		paths, _ = filepath.Glob(filepath.Join(dir, "*"+history.Suffix))
	}
	out := []historyStatus{}
	for i, path := range paths {
		recs, skipped, err := history.Read(path)
		if err != nil {
			st.Errors = append(st.Errors, err.Error())
			continue
		}
		if len(recs) == 0 && len(named) == 0 {
			continue
		}
		hs := summarizeHistory(recs, st)
		hs.File, hs.SkippedLines = path, skipped
		if len(named) > 0 {
			hs.RunID = named[i]
		}
		out = append(out, hs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RunID < out[j].RunID })
	return out
}

func summarizeHistory(recs []history.Record, st *statusReport) historyStatus {
	s := history.Summarize(recs)
	hs := historyStatus{LastStart: s.LastStart, LastExitCode: -1, SkippedStarts: s.Skipped,
		RunsTotal: s.RunsTotal, Conflicts: s.Conflicts, Runs: []runStatus{}}
	for _, rec := range recs {
		hs.RunID = rec.RunID
	}
	for i := len(s.Runs) - 1; i >= 0 && len(hs.Runs) < shownRuns; i-- {
		hs.Runs = append(hs.Runs, runStatus{s.Runs[i], runState(s.Runs[i], st)})
	}
	if s.Last != nil {
		hs.LastEnd, hs.LastResult, hs.LastExitCode, hs.LastDuration = s.Last.EndedAt, s.Last.Result, *s.Last.ExitCode, s.Last.Duration()
	}
	if len(hs.Runs) > 0 && hs.Runs[0].State == "ended unobserved" {
		hs.LastResult = "ended unobserved"
	}
	if s.LastSuccess != nil {
		hs.LastSuccess = s.LastSuccess.EndedAt
	}
	return hs
}

// runState is "running" for a start whose withlock still holds the lock,
// "ended unobserved" for one whose withlock is gone.
func runState(rec history.Record, st *statusReport) string {
	if !rec.Open() {
		return "ended"
	}
	for _, l := range st.Locks {
		if l.Pid == rec.Pid && l.Host == rec.Host && l.Liveness != "dead" && l.State == "held" {
			return "running"
		}
	}
	return "ended unobserved"
}

// outcome is how a run ended, as a person reads it.
func outcome(r runStatus) string {
	switch {
	case r.State != "ended":
		return r.State
	case r.Result == history.ResultExit:
		return fmt.Sprintf("exit %d", *r.ExitCode)
	case r.Result == history.ResultSignal:
		return "signal " + r.Signal
	case r.Result == history.ResultError:
		return "error: " + r.Message
	}
	return r.Result // timeout, lock_lost
}

func agoEpoch(now, t float64) string {
	if t == 0 {
		return "never"
	}
	return ago(now - t)
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
			t.row("  "+h.RunID, agoEpoch(st.Now, h.LastStart), orDash(lastResult(h)), agoEpoch(st.Now, h.LastSuccess),
				durationOrDash(h), fmt.Sprint(h.SkippedStarts))
		}
		t.Flush()
		return
	}
	for _, h := range st.History {
		fmt.Fprintf(w, "\nhistory of %s:\n", h.RunID)
		fmt.Fprintf(w, "  last start:   %s\n", agoEpoch(st.Now, h.LastStart))
		fmt.Fprintf(w, "  last result:  %s, %s\n", orDash(lastResult(h)), agoEpoch(st.Now, h.LastEnd))
		fmt.Fprintf(w, "  last success: %s\n", agoEpoch(st.Now, h.LastSuccess))
		fmt.Fprintf(w, "  duration:     %s\n", durationOrDash(h))
		fmt.Fprintf(w, "  skipped:      %d starts since the last run (%d refused in all)\n", h.SkippedStarts, h.Conflicts)
		if len(h.Runs) == 0 {
			continue
		}
		t := newTable(w, "  STARTED", "DURATION", "RESULT", "PID", "TOKEN", "COMMAND")
		for _, r := range h.Runs {
			dur := "-"
			if r.EndedAt > 0 {
				dur = shortDuration(r.Duration())
			}
			t.row("  "+agoEpoch(st.Now, r.StartedAt), dur, outcome(r), fmt.Sprint(r.Pid), fmt.Sprint(r.FencingToken), orDash(r.Command))
		}
		t.Flush()
	}
}

func lastResult(h historyStatus) string {
	if h.LastResult == "" || h.LastResult == "ended unobserved" {
		return h.LastResult
	}
	for _, r := range h.Runs {
		if r.State == "ended" {
			return outcome(r)
		}
	}
	if h.LastResult == history.ResultExit || h.LastResult == history.ResultSignal {
		return fmt.Sprintf("%s (%d)", h.LastResult, h.LastExitCode)
	}
	return h.LastResult
}

func durationOrDash(h historyStatus) string {
	if h.LastEnd == 0 {
		return "-"
	}
	return shortDuration(h.LastDuration)
}
