package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/withlock/withlock/locks"
)

// table collects rows and prints them with aligned columns.
type table struct{ rows [][]string }

func newTable(header ...string) *table { return &table{rows: [][]string{header}} }

// row adds a row; each cell is made one printable line (locks.OneLine).
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = locks.OneLine(c)
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
