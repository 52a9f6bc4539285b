// Command withlock-metrics is the writing half of `withlock metrics` (SPEC
// §8): it reads the report of `withlock status --json` on its stdin and
// prints it as the Prometheus text format, or writes it atomically for
// node_exporter's textfile collector. withlock builds the report (on
// either backend: it is status's, whose locks[] entries carry each run
// id's history) and starts this binary with it; this binary only turns it
// into metrics. It is a binary of its own so that withlock does not link
// the Prometheus client, whose initialisation every `withlock run` would
// pay for.
//
//	withlock status --json | withlock-metrics [--textfile PATH]
//
// Exits 0; 64 for a bad command line or a stdin that is not such a report;
// 73 when the text file cannot be written, or when the report says
// something could not be read (its "errors", printed one a line; the
// metrics of what could are still written).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"golang.org/x/term"
)

func main() {
	fs := flag.NewFlagSet("withlock-metrics", flag.ContinueOnError)
	textfile := fs.String("textfile", "", "write to `PATH` atomically (temp file + rename) instead of stdout")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: withlock status --json | withlock-metrics [--textfile PATH]   (withlock metrics runs it so)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	} else if err != nil {
		os.Exit(64)
	}
	if fs.NArg() > 0 {
		fail(64, fmt.Errorf("takes no arguments (got %q)", fs.Args()))
	}
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fail(64, errors.New("reads the report of `withlock status --json` on stdin; run `withlock metrics`"))
	}
	rep, err := readReport(os.Stdin)
	if err != nil {
		fail(64, err)
	}
	if err := write(rep, *textfile); err != nil {
		fail(73, err)
	}
	for _, e := range rep.Errors {
		fmt.Fprintln(os.Stderr, "withlock: metrics: "+e)
	}
	if len(rep.Errors) > 0 {
		os.Exit(73)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "withlock: metrics:", err)
	os.Exit(code)
}

// report is what this binary reads of `withlock status --json`: each lock
// entry's run id (a slot's is its run id's), state and holder liveness,
// and its run id's history (every entry of a run id carries the same);
// times are epoch seconds, 0 for never.
type report struct {
	Locks  []lockEntry `json:"locks"`
	Errors []string    `json:"errors"`
}

type lockEntry struct {
	RunID        string         `json:"run_id"`
	State        string         `json:"state"`    // held | stale | torn | unreadable | free
	Liveness     string         `json:"liveness"` // alive | dead | pid reused | unknown | ""
	LastStart    float64        `json:"last_start"`
	LastEnd      float64        `json:"last_end"` // of the last run that ended with an exit status
	LastExitCode int            `json:"last_exit_code"`
	LastDuration float64        `json:"last_duration_seconds"`
	LastSuccess  float64        `json:"last_success"`
	RunsTotal    map[string]int `json:"runs_total"`
	Conflicts    int            `json:"conflicts_total"`
}

func readReport(r io.Reader) (*report, error) {
	var rep report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("stdin is not the report of `withlock status --json`: %w", err)
	}
	if rep.Locks == nil {
		return nil, errors.New("stdin is not the report of `withlock status --json`: it has no \"locks\"")
	}
	return &rep, nil
}

// write prints the metrics of rep, or writes them to textfile (temp file
// + rename) when it is not "".
func write(rep *report, textfile string) error {
	reg := prometheus.NewRegistry()
	newMetrics(reg).add(rep)
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

// add sets the metrics of every run id in rep: its history (once, from its
// first entry), and withlock_held — 1 when one of its entries is held (or
// torn: being written, which counts as held), with holder_alive true when
// such a holder is not known dead; else 0 and false.
func (m *metrics) add(rep *report) {
	held, alive, order := map[string]bool{}, map[string]bool{}, []string{}
	first := map[string]lockEntry{}
	for _, l := range rep.Locks {
		if l.RunID == "" {
			continue // an unreadable lock file that names no run id (the report's errors say so)
		}
		if _, seen := first[l.RunID]; !seen {
			first[l.RunID] = l
			order = append(order, l.RunID)
		}
		if l.State == "held" || l.State == "torn" {
			held[l.RunID] = true
			alive[l.RunID] = alive[l.RunID] || l.Liveness != "dead"
		}
	}
	for _, id := range order {
		h := first[id]
		if h.LastStart > 0 {
			m.lastStart.WithLabelValues(id).Set(h.LastStart)
		}
		if h.LastEnd > 0 {
			m.lastEnd.WithLabelValues(id).Set(h.LastEnd)
			m.lastDuration.WithLabelValues(id).Set(h.LastDuration)
			m.lastExit.WithLabelValues(id).Set(float64(h.LastExitCode))
		}
		if h.LastSuccess > 0 {
			m.lastSuccess.WithLabelValues(id).Set(h.LastSuccess)
		}
		for result, n := range h.RunsTotal {
			m.runs.WithLabelValues(id, result).Add(float64(n))
		}
		m.conflicts.WithLabelValues(id).Add(float64(h.Conflicts))
		v := 0.0
		if held[id] {
			v = 1
		}
		m.held.WithLabelValues(id, fmt.Sprint(alive[id])).Set(v)
	}
}
