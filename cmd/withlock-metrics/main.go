// Command withlock-metrics is `withlock metrics` (SPEC §8): the Prometheus
// text format of every run id's history in a lock dir, printed or written
// atomically for node_exporter's textfile collector. It is a binary of its
// own so that withlock itself does not link the Prometheus client, whose
// initialisation every `withlock run` would pay for; withlock execs it.
//
//	withlock-metrics [--dir DIR] [--textfile PATH]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
	"github.com/withlock/withlock/locks/history"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "metrics" {
		args = args[1:] // exec'd by withlock with its command line
	}
	fs := flag.NewFlagSet("withlock metrics", flag.ContinueOnError)
	dir := fs.String("dir", "", "lock directory (else $WITHLOCK_DIR, $NEXUSCORE_RUN_LOCK_DIR, the default)")
	textfile := fs.String("textfile", "", "write to `PATH` atomically (temp file + rename) instead of stdout")
	if err := fs.Parse(args); err != nil {
		os.Exit(64)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "withlock: metrics: takes no arguments (got %q)\n", fs.Args())
		os.Exit(64)
	}
	if err := run(filelock.ResolveDir(*dir, os.Getenv), *textfile); err != nil {
		fmt.Fprintln(os.Stderr, "withlock: metrics:", err)
		os.Exit(73)
	}
}

func run(dir, textfile string) error {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	if err := m.collect(dir); err != nil {
		return err
	}
	if textfile != "" {
		return prometheus.WriteToTextfile(textfile, reg)
	}
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(os.Stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

type metrics struct {
	lastStart, lastEnd, lastSuccess, lastDuration, lastExit *prometheus.GaugeVec
	runs, conflicts                                         *prometheus.CounterVec
	held                                                    *prometheus.GaugeVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append([]string{"run_id"}, labels...))
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append([]string{"run_id"}, labels...))
		reg.MustRegister(c)
		return c
	}
	return &metrics{
		lastStart:    gauge("withlock_last_start_timestamp_seconds", "When the last run started."),
		lastEnd:      gauge("withlock_last_end_timestamp_seconds", "When the last run that ended ended."),
		lastSuccess:  gauge("withlock_last_success_timestamp_seconds", "When the last run that exited 0 ended."),
		lastDuration: gauge("withlock_last_duration_seconds", "How long the last run that ended took."),
		lastExit:     gauge("withlock_last_exit_code", "withlock's exit status of the last run that ended."),
		runs:         counter("withlock_runs_total", "Runs that ended, by result (exit, signal, timeout, lock_lost, error).", "result"),
		conflicts:    counter("withlock_conflicts_total", "Starts refused because the lock was held."),
		held:         gauge("withlock_held", "1 while the run lock is held.", "holder_alive"),
	}
}

// collect reads every history file in dir, and the locks held there.
func (m *metrics) collect(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*"+history.Suffix))
	if err != nil {
		return err
	}
	seen := map[string]history.Summary{}
	for _, path := range paths {
		recs, _, err := history.Read(path)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			continue
		}
		seen[recs[len(recs)-1].RunID] = history.Summarize(recs)
	}
	locker, err := filelock.NewRunLocker(dir, locks.DefaultTTL)
	if err != nil {
		return err
	}
	rep, err := locker.Inspect()
	if err != nil {
		return err
	}
	held := map[string]bool{} // run id -> some holder alive
	for _, l := range rep.Locks {
		if l.State != filelock.StateHeld && l.State != filelock.StateTorn {
			continue
		}
		id, _, _, _ := locks.ParseSlotRunID(l.Payload.RunID)
		held[id] = held[id] || l.Liveness != filelock.HolderDead
		if s, ok := seen[id]; ok && l.State == filelock.StateHeld {
			// A run under way has no record yet: its start is its lock's.
			s.LastStart = max(s.LastStart, l.Payload.CreatedAt)
			seen[id] = s
		}
	}
	for id, s := range seen {
		m.add(id, s)
	}
	for id, alive := range held {
		m.held.WithLabelValues(id, fmt.Sprint(alive)).Set(1)
	}
	for id := range seen {
		if _, ok := held[id]; !ok {
			m.held.WithLabelValues(id, "false").Set(0)
		}
	}
	return nil
}

func (m *metrics) add(id string, s history.Summary) {
	if s.LastStart > 0 {
		m.lastStart.WithLabelValues(id).Set(s.LastStart)
	}
	if s.Last != nil {
		m.lastEnd.WithLabelValues(id).Set(s.Last.EndedAt)
		m.lastDuration.WithLabelValues(id).Set(s.Last.Duration())
		m.lastExit.WithLabelValues(id).Set(float64(*s.Last.ExitCode))
	}
	if s.LastSuccess != nil {
		m.lastSuccess.WithLabelValues(id).Set(s.LastSuccess.EndedAt)
	}
	for result, n := range s.RunsTotal {
		m.runs.WithLabelValues(id, result).Add(float64(n))
	}
	m.conflicts.WithLabelValues(id).Add(float64(s.Conflicts))
}
