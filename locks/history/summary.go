package history

import "sort"

// Summary is what status and metrics show of one run id's history.
type Summary struct {
	// Runs are the runs kept, in the order started: every run that ended
	// and, as its KindStart marker, every run started and not (yet) ended.
	// A marker whose holder is gone is a run that ended unobserved (its
	// withlock was killed).
	Runs        []Record
	Last        *Record // the run that ended last
	LastSuccess *Record // the run that ended last with exit status 0
	LastStart   float64 // when the last run started (0: never)
	Skipped     int     // starts refused since the last run started
	RunsTotal   map[string]int
	Conflicts   int // starts refused, ever (as far as the file remembers)
}

// Open reports whether rec is a start that no end record closes.
func (rec Record) Open() bool { return rec.Kind == KindStart }

// Succeeded reports whether rec is a run that exited with status 0.
func (rec Record) Succeeded() bool {
	return rec.Kind == KindRun && rec.Result == ResultExit && rec.ExitCode != nil && *rec.ExitCode == 0
}

// Duration is how long the run took, in seconds.
func (rec Record) Duration() float64 { return rec.EndedAt - rec.StartedAt }

type runKey struct {
	pid     int
	host    string
	started float64
}

func keyOf(rec Record) runKey { return runKey{rec.Pid, rec.Host, rec.StartedAt} }

// Runs pairs start markers with the records of the runs they began: it
// returns every run record and every start marker no run record ends, in
// the order started.
func Runs(recs []Record) []Record {
	ended := make(map[runKey]bool)
	for _, rec := range recs {
		if rec.Kind == KindRun {
			ended[keyOf(rec)] = true
		}
	}
	var runs []Record
	for _, rec := range recs {
		if rec.Kind == KindRun || rec.Kind == KindStart && !ended[keyOf(rec)] {
			runs = append(runs, rec)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].StartedAt < runs[j].StartedAt })
	return runs
}

// Summarize reads a run id's records.
func Summarize(recs []Record) Summary {
	s := Summary{Runs: Runs(recs), RunsTotal: make(map[string]int)}
	var totals Record
	for i, rec := range recs {
		switch rec.Kind {
		case KindTotals:
			totals = rec
			add(s.RunsTotal, rec.Runs)
			s.Conflicts += rec.Conflicts
		case KindRun:
			s.RunsTotal[rec.Result]++
			if s.Last == nil || rec.EndedAt > s.Last.EndedAt {
				s.Last = &recs[i]
			}
			if rec.Succeeded() && (s.LastSuccess == nil || rec.EndedAt > s.LastSuccess.EndedAt) {
				s.LastSuccess = &recs[i]
			}
		case KindRefused:
			s.Conflicts++
		}
	}
	if n := len(s.Runs); n > 0 {
		s.LastStart = s.Runs[n-1].StartedAt
	}
	for _, rec := range recs {
		if rec.Kind == KindRefused && rec.At > s.LastStart {
			s.Skipped++
		}
	}
	if totals.SkippedSince == s.LastStart {
		s.Skipped += totals.Skipped
	}
	return s
}

// Bound is what a rewrite keeps of recs: the last KeepRuns runs, the last
// KeepRefused refused starts, and one totals line counting what the others
// counted (so that counters never go down). Start markers of runs that
// ended are dropped: their end record says it all.
func Bound(recs []Record) []Record {
	all := Summarize(recs)
	runs := all.Runs[max(0, len(all.Runs)-KeepRuns):]
	var refused []Record
	for _, rec := range recs {
		if rec.Kind == KindRefused {
			refused = append(refused, rec)
		}
	}
	kept := append(runs, refused[max(0, len(refused)-KeepRefused):]...)
	left := Summarize(kept)
	totals := Record{Kind: KindTotals, RunID: recs[0].RunID, Runs: make(map[string]int),
		Conflicts: all.Conflicts - left.Conflicts, Skipped: all.Skipped - left.Skipped, SkippedSince: all.LastStart}
	for result, n := range all.RunsTotal {
		totals.Runs[result] = n - left.RunsTotal[result]
	}
	return append([]Record{totals}, kept...)
}

func add(to, from map[string]int) {
	for k, n := range from {
		to[k] += n
	}
}
