package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"
)

// table collects rows and prints them with aligned columns.
type table struct{ rows [][]string }

func newTable(header ...string) *table { return &table{rows: [][]string{header}} }

// row adds a row; each cell is made one printable line (see oneLine).
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = oneLine(c)
	}
	t.rows = append(t.rows, cells)
}

func (t *table) write(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// oneLine turns control characters (newlines and tabs of a `sh -c` script,
// terminal escapes) into spaces, so that text taken from a lock file — a
// holder's command above all — stays on its line: a newline would break a
// table row or the waiting line, which is redrawn with a carriage return.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
