package main

import (
	"fmt"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/withlock/withlock/locks"
)

// waitLine shows, while withlock waits for a held lock on a terminal, one
// updating line on stderr: which lock, held by whom, for how long, how long
// we have waited. Nothing when stderr is not a terminal.
//
// Update is called only when the acquirer wakes (about once a second, or
// on an event), so a timer redraws the line every second in between; Done
// stops it and clears the line. Both are safe from any goroutine. Write
// is for everything else that writes there (the logger): a line written
// while the waiting line is drawn first clears it, so the two never share
// a row; the next tick draws it again.
type waitLine struct {
	runID string
	out   *os.File
	tty   bool
	every time.Duration

	mu      sync.Mutex
	holder  locks.Holder
	started time.Time // when this acquirer began to wait
	drawn   bool
	done    bool
	redraw  *time.Timer // nil until the first Update
}

// newWaitLine is the waiting line of runID on out; with quiet (-q) it
// draws nothing: nothing on stderr unless something is wrong.
func newWaitLine(out *os.File, runID string, quiet bool) *waitLine {
	return &waitLine{runID: runID, out: out, tty: !quiet && term.IsTerminal(int(out.Fd())), every: time.Second}
}

// Update is called before each wait with the current holder (not nil).
func (w *waitLine) Update(h *locks.Holder, waited time.Duration) {
	if !w.tty {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.holder = *h
	if w.redraw == nil {
		w.started = time.Now().Add(-waited)
		w.redraw = time.AfterFunc(w.every, w.tick)
	}
	w.drawLocked()
}

// Done clears the line once the wait is over and stops the redraws; one
// already under way finds done set and draws nothing.
func (w *waitLine) Done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.redraw != nil {
		w.redraw.Stop()
	}
	w.done = true
	w.clearLocked()
}

func (w *waitLine) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.drawLocked()
		w.redraw.Reset(w.every)
	}
}

// drawLocked rewrites the line in place: carriage return, the text on one
// line and cut to the terminal's width (a broken or wrapped line could not
// be redrawn), clear to the end of the line.
func (w *waitLine) drawLocked() {
	text := locks.OneLine(w.text(time.Now()))
	// At most cols-1 runes, a cut marked with "…".
	if cols, _, err := term.GetSize(int(w.out.Fd())); err == nil && cols > 1 && utf8.RuneCountInString(text) > cols-1 {
		text = string([]rune(text)[:cols-2]) + "…"
	}
	fmt.Fprint(w.out, "\r"+text+"\x1b[K")
	w.drawn = true
}

// text is the line: how long we have waited, then the holder as a
// conflict names it (Holder.Describe).
func (w *waitLine) text(now time.Time) string {
	waited := max(now.Sub(w.started), 0).Round(time.Second)
	return fmt.Sprintf("withlock: waiting %s for %q, held by %s", waited, w.runID, w.holder.Describe(now))
}

func (w *waitLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.clearLocked()
	return w.out.Write(p)
}

func (w *waitLine) clearLocked() {
	if w.drawn {
		fmt.Fprint(w.out, "\r\x1b[K")
		w.drawn = false
	}
}
