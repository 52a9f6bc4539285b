package history

import (
	"maps"
	"sort"
)

// Summary is what status and metrics show of one run id's history.
type Summary struct {
	Runs        []Record // the runs kept, in the order started
	Last        *Record  // the run that ended last (with an exit status)
	LastSuccess *Record  // the run that ended last with exit status 0
	LastStart   float64  // when the last run started (0: never)
	Skipped     int      // starts refused since the last run started
	RunsTotal   map[string]int
	Conflicts   int // starts refused, ever (as far as the file remembers)

	refused []Record // the refused starts kept
	totals  Record   // the file's totals line
}

// Succeeded reports whether rec is a run that exited with status 0.
func (rec Record) Succeeded() bool {
	return rec.Result == ResultExit && rec.ExitCode != nil && *rec.ExitCode == 0
}

// Duration is how long the run took, in seconds.
func (rec Record) Duration() float64 { return rec.EndedAt - rec.StartedAt }

// Summarize reads a run id's records.
func Summarize(recs []Record) Summary {
	s := Summary{RunsTotal: make(map[string]int)}
	for i, rec := range recs {
		switch rec.Kind {
		case KindTotals:
			s.totals = rec
			for result, n := range rec.Runs {
				s.RunsTotal[result] += n
			}
			s.Conflicts += rec.Conflicts
		case KindRun:
			s.Runs = append(s.Runs, rec)
			s.RunsTotal[rec.Result]++
			s.LastStart = max(s.LastStart, rec.StartedAt)
			if rec.ExitCode != nil && (s.Last == nil || rec.EndedAt > s.Last.EndedAt) {
				s.Last = &recs[i]
			}
			if rec.Succeeded() && (s.LastSuccess == nil || rec.EndedAt > s.LastSuccess.EndedAt) {
				s.LastSuccess = &recs[i]
			}
		case KindRefused:
			s.Conflicts++
			s.refused = append(s.refused, rec)
		}
	}
	sort.SliceStable(s.Runs, func(i, j int) bool { return s.Runs[i].StartedAt < s.Runs[j].StartedAt })
	for _, rec := range s.refused {
		if rec.At > s.LastStart {
			s.Skipped++
		}
	}
	if s.totals.SkippedSince == s.LastStart {
		s.Skipped += s.totals.Skipped
	}
	return s
}

// Bound is what a compaction keeps of recs: one totals line counting what
// it drops (so that counters never go down), the last KeepRuns runs and
// the last KeepRefused refused starts.
func Bound(recs []Record) []Record {
	s := Summarize(recs)
	drop := max(0, len(s.Runs)-KeepRuns)
	totals := Record{Run: Run{Kind: KindTotals, RunID: recs[0].RunID}, Runs: map[string]int{},
		Conflicts: s.Conflicts - min(len(s.refused), KeepRefused), Skipped: s.Skipped, SkippedSince: s.LastStart}
	maps.Copy(totals.Runs, s.totals.Runs)
	for _, rec := range s.Runs[:drop] {
		totals.Runs[rec.Result]++
	}
	kept := append([]Record{totals}, s.Runs[drop:]...)
	for _, rec := range s.refused[max(0, len(s.refused)-KeepRefused):] {
		kept = append(kept, rec)
		if rec.At > s.LastStart {
			totals.Skipped--
		}
	}
	kept[0] = totals
	return kept
}
