//go:build linux

package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// benchReport is what -json writes.
type benchReport struct {
	Started  time.Time       `json:"started"`
	Machine  machineInfo     `json:"machine"`
	Sections []sectionResult `json:"sections"`
	Bars     []bar           `json:"bars"`
}

type machineInfo struct {
	Cores    int    `json:"cores"`
	CPU      string `json:"cpu"`
	Kernel   string `json:"kernel"`
	Go       string `json:"go"`
	Withlock string `json:"withlock"`
}

type sectionResult struct {
	Name   string       `json:"name"`
	Title  string       `json:"title"`
	Unit   string       `json:"unit"`
	Note   string       `json:"note,omitempty"`
	Target float64      `json:"target,omitempty"` // a bound withlock's runs should stay under, in Unit
	Base   string       `json:"base,omitempty"`   // the tool each Delta is taken against
	Error  string       `json:"error,omitempty"`  // the section could not be prepared
	Tools  []toolResult `json:"tools"`
}

type toolResult struct {
	Tool    string    `json:"tool"`
	Command string    `json:"command"`
	Missing string    `json:"missing,omitempty"`
	Error   string    `json:"error,omitempty"`
	Runs    int       `json:"runs"`
	Median  float64   `json:"median"`
	P90     float64   `json:"p90"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Ratio   *float64  `json:"withlock_ratio,omitempty"` // withlock's median ÷ this tool's
	Delta   *float64  `json:"delta,omitempty"`          // this tool's median − the base tool's, in Unit
	OfBase  *float64  `json:"of_base,omitempty"`        // this tool's median ÷ the base tool's
	Samples []float64 `json:"samples"`
}

// result summarises a measured section; the first tool is the subject.
func result(s section, tools []*tool) sectionResult {
	r := sectionResult{Name: s.name, Title: s.title, Unit: s.unit, Note: s.note, Target: s.target, Base: s.base}
	var subject summary
	for i, t := range tools {
		sum := summarize(t.samples)
		if i == 0 || t.subject {
			subject = sum
		}
		tr := toolResult{Tool: t.name, Command: t.command, Missing: t.missing, Runs: sum.n,
			Median: sum.median, P90: percentile(t.samples, 90), Min: sum.min, Max: sum.max, Samples: t.samples}
		if t.err != nil {
			tr.Error = t.err.Error()
		}
		if i > 0 && !t.subject && subject.n > 0 && sum.n > 0 && sum.median > 0 {
			ratio := subject.median / sum.median
			tr.Ratio = &ratio
		}
		r.Tools = append(r.Tools, tr)
	}
	addDeltas(r.Tools, s.base)
	return r
}

// addDeltas sets every measured tool's Delta to its median minus that of
// the tool named base, when base was measured.
func addDeltas(tools []toolResult, base string) {
	i := slices.IndexFunc(tools, func(t toolResult) bool { return t.Tool == base })
	if base == "" || i < 0 || tools[i].Runs == 0 {
		return
	}
	for k := range tools {
		if tools[k].Runs > 0 {
			delta := tools[k].Median - tools[i].Median
			tools[k].Delta = &delta
			if tools[i].Median > 0 {
				of := tools[k].Median / tools[i].Median
				tools[k].OfBase = &of
			}
		}
	}
}

// failed reports whether any measurement failed (a missing peer is not a failure).
func (r benchReport) failed() bool {
	for _, s := range r.Sections {
		if s.Error != "" {
			return true
		}
		for _, t := range s.Tools {
			if t.Error != "" {
				return true
			}
		}
	}
	return false
}

// writeTable prints the report as one table, a block per section.
func writeTable(w io.Writer, r benchReport) {
	m := r.Machine
	fmt.Fprintf(w, "\nwithlock bench: %d cores, %s, Linux %s, %s, %s\n", m.Cores, m.CPU, m.Kernel, m.Go, m.Withlock)
	fmt.Fprintf(w, "median, p90 and min–max of runs interleaved tool by tool; ratio = withlock's median ÷ the tool's\n")
	// Title and note lines have no tab, so they take no part in column widths.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range r.Sections {
		fmt.Fprintf(tw, "\n%s [%s]\n", s.Title, s.Unit)
		if s.Error != "" {
			fmt.Fprintf(tw, "  error: %s\n", oneLine(s.Error))
			continue
		}
		header, deltas := "  tool\tcommand\truns\tmedian\tp90\tmin–max\tratio", s.Base != ""
		if deltas {
			header += "\tΔ vs " + s.Base
		}
		fmt.Fprintln(tw, header)
		for _, t := range s.Tools {
			row := cells(t)
			if deltas {
				row += "\t" + deltaCell(t)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", t.Tool, t.Command, row)
		}
		if s.Target > 0 {
			fmt.Fprintf(tw, "  target: withlock under %s %s\n", num(s.Target), s.Unit)
		}
		if s.Note != "" {
			fmt.Fprintf(tw, "  (%s)\n", s.Note)
		}
	}
	tw.Flush()
}

// cells is the runs, median, p90, range and ratio columns of one tool.
func cells(t toolResult) string {
	switch {
	case t.Missing != "":
		return "\t" + t.Missing + "\t\t\t"
	case t.Error != "" && t.Runs == 0:
		return "\terror: " + oneLine(t.Error) + "\t\t\t"
	}
	ratio := ""
	if t.Ratio != nil {
		ratio = num(*t.Ratio) + "×"
	}
	line := fmt.Sprintf("%d\t%s\t%s\t%s–%s\t%s", t.Runs, num(t.Median), num(t.P90), num(t.Min), num(t.Max), ratio)
	if t.Error != "" {
		line += "  (then error: " + oneLine(t.Error) + ")"
	}
	return line
}

// deltaCell is a tool's Delta with its sign and its median as a multiple
// of the base's, empty when there is none.
func deltaCell(t toolResult) string {
	var cell string
	switch {
	case t.Delta == nil:
		return ""
	case *t.Delta < 0:
		cell = "-" + num(-*t.Delta)
	default:
		cell = "+" + num(*t.Delta)
	}
	if t.OfBase != nil {
		cell += " (" + num(*t.OfBase) + "×)"
	}
	return cell
}

// num prints a value with two decimals below 10, one below 100, none above.
func num(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
