package main

import (
	"time"

	"github.com/withlock/withlock/locks"
)

// waitLine shows, while withlock waits for a held lock on a terminal, one
// updating line on stderr: which lock, held by whom, for how long, how long
// we have waited. Nothing when stderr is not a terminal.
type waitLine struct {
	runID string
}

func newWaitLine(runID string) *waitLine { return &waitLine{runID: runID} }

// Update is called before each wait with the current holder.
func (w *waitLine) Update(h *locks.Holder, waited time.Duration) {}

// Done clears the line once the wait is over.
func (w *waitLine) Done() {}
