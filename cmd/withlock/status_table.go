package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/withlock/withlock/locks"
)

// table prints rows with aligned columns (text/tabwriter) once flushed.
type table struct{ *tabwriter.Writer }

func newTable(w io.Writer, header ...string) table {
	t := table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

// row adds a row; each cell is made one printable line (locks.OneLine).
func (t table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = locks.OneLine(c)
	}
	fmt.Fprintln(t, strings.Join(cells, "\t"))
}
