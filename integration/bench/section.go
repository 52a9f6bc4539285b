//go:build linux

package main

import (
	"fmt"
	"time"
)

// A section compares withlock with its peers on one measurement. To add one,
// write a file with an init that calls register (overhead.go is the
// shortest example); its tools are measured interleaved, run by run.
type section struct {
	order int    // print order: the core sections use 10…60
	name  string // for -only, e.g. "overhead"
	title string // what is measured, one line
	unit  string // unit of every sample, e.g. "ms"
	note  string // how to read the numbers, printed under the table
	// target, when set, is a bound the subject's runs should stay under, in unit.
	target float64
	// base, when set, names the tool every tool's median is also compared
	// with as a difference (a column "Δ vs base", in unit).
	base string
	// warmup runs each tool once, unrecorded, before measuring (for quick runs).
	warmup bool
	// runs is how many interleaved rounds to measure (each tool once per round).
	runs func(b *bench) int
	// prepare returns the tools, the first being the subject the ratios
	// compare (withlock; see tool.subject), and a cleanup that always runs.
	prepare func(b *bench) ([]*tool, func(), error)
}

// A tool is one contender of a section.
type tool struct {
	name    string // short label: withlock, flock, tini, …
	command string // the command line measured, for the table
	missing string // non-empty: not measured, shown instead of numbers
	// subject starts a group: the ratios of the tools after it (up to the
	// next subject) are against it. The first tool always is one.
	subject bool
	// measure performs run number i and returns one sample in the section's unit.
	measure func(i int) (float64, error)

	samples []float64
	err     error // first failure; the tool is not measured after it
}

var sections []section

// register adds a section; they run and print by order.
func register(s section) { sections = append(sections, s) }

// interleave measures every available tool once per round, rotating which
// goes first, so that machine noise (a cron job, a CPU frequency change)
// hits all tools alike. With warmup, each tool first runs once unrecorded.
func interleave(rounds int, tools []*tool, warmup bool) {
	for _, t := range tools {
		if warmup && t.missing == "" {
			_, t.err = t.measure(-1)
		}
	}
	for i := range rounds {
		for k := range tools {
			t := tools[(i+k)%len(tools)]
			if t.missing != "" || t.err != nil {
				continue
			}
			v, err := t.measure(i)
			if err != nil {
				t.err = fmt.Errorf("run %d: %w", i, err)
				continue
			}
			t.samples = append(t.samples, v)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
