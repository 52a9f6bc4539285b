package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"go.uber.org/goleak"

	"github.com/withlock/withlock/locks"
)

// ptyCapture collects what is written to a pseudo-terminal.
type ptyCapture struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan struct{}
}

func capturePty(t *testing.T) (*os.File, *ptyCapture, func()) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	c := &ptyCapture{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			c.mu.Lock()
			c.buf.Write(b[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return tty, c, func() { tty.Close(); ptmx.Close(); <-c.done }
}

func (c *ptyCapture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitFor polls until cond holds on the captured output, up to 10s.
func (c *ptyCapture) waitFor(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(c.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("terminal never showed %s; got %q", what, c.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testHolder() *locks.Holder {
	created := time.Now().Add(-90 * time.Second)
	return &locks.Holder{Payload: locks.Payload{
		Pid: 4242, Host: "box", Command: "sleep 60",
		CreatedAt: float64(created.UnixNano()) / 1e9,
	}}
}

func TestWaitLineUpdatesAndClearsOnATerminal(t *testing.T) {
	defer goleak.VerifyNone(t)
	tty, out, closePty := capturePty(t)
	defer closePty()

	w := newWaitLine(tty, "job", false)
	if !w.tty {
		t.Fatal("a pty is not taken for a terminal")
	}
	if newWaitLine(tty, "job", true).tty {
		t.Fatal("-q draws a waiting line")
	}
	w.every = 10 * time.Millisecond
	w.Update(testHolder(), 3*time.Second)
	// Update is called only at wake-ups; the ticker redraws in between.
	out.waitFor(t, "three draws", func(s string) bool { return strings.Count(s, "\r") >= 3 })
	w.Done()
	w.Done() // idempotent
	w.Update(testHolder(), time.Second)
	out.waitFor(t, "the line cleared", func(s string) bool { return strings.HasSuffix(s, "\r\x1b[K") })

	s := out.String()
	first := strings.Split(s, "\r")[1]
	if !strings.HasPrefix(first, `withlock: waiting 3s for "job", held by pid 4242 on box (sleep 60) for 1m30s`) ||
		!strings.HasSuffix(first, "\x1b[K") {
		t.Errorf("line %q", first)
	}
	time.Sleep(30 * time.Millisecond) // three ticks: nothing may draw after Done
	if after := out.String(); after != s {
		t.Errorf("drawn after Done: %q", after[len(s):])
	}
}

func TestWaitLineFitsTheTerminal(t *testing.T) {
	defer goleak.VerifyNone(t)
	tty, out, closePty := capturePty(t)
	defer closePty()
	// Setsize on the pty's other end applies to both.
	if err := pty.Setsize(tty, &pty.Winsize{Rows: 24, Cols: 40}); err != nil {
		t.Fatal(err)
	}
	w := newWaitLine(tty, "job", false)
	w.Update(testHolder(), 0)
	w.Done()
	out.waitFor(t, "the cleared line", func(s string) bool { return strings.HasSuffix(s, "\r\x1b[K") })
	line := strings.TrimSuffix(strings.Split(out.String(), "\r")[1], "\x1b[K")
	if n := len([]rune(line)); n != 39 || !strings.HasSuffix(line, "…") {
		t.Errorf("line of %d runes for 40 columns: %q", n, line)
	}
}

func TestWaitLineSilentWhenNotATerminal(t *testing.T) {
	defer goleak.VerifyNone(t)
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w := newWaitLine(wr, "job", false)
	w.Update(testHolder(), time.Second)
	w.Done()
	wr.Close()
	var got bytes.Buffer
	got.ReadFrom(r)
	if got.Len() != 0 {
		t.Errorf("wrote %q to a pipe", got.String())
	}
}

func TestWaitLineTornHolder(t *testing.T) {
	w := &waitLine{runID: "job", started: time.Now().Add(-2 * time.Second)}
	w.holder = locks.Holder{Torn: true, ModTime: time.Now().Add(-time.Second)}
	if got := w.text(time.Now()); got != `withlock: waiting 2s for "job", held by an unreadable lock file written 1s ago (a writer may be mid-write)` {
		t.Errorf("%q", got)
	}
}

// TestWaitLineStaysOneLine: a holder's `sh -c` script spans lines; drawn
// as is, every redraw (a carriage return) would leave a line behind.
func TestWaitLineStaysOneLine(t *testing.T) {
	defer goleak.VerifyNone(t)
	tty, out, closePty := capturePty(t)
	defer closePty()
	w := newWaitLine(tty, "job", false)
	h := testHolder()
	h.Command = "sh -c sleep 5\n\techo done\x1b[2J"
	w.Update(h, 0)
	w.Done()
	out.waitFor(t, "the cleared line", func(s string) bool { return strings.HasSuffix(s, "\r\x1b[K") })
	line := strings.TrimSuffix(strings.Split(out.String(), "\r")[1], "\x1b[K")
	if !strings.HasSuffix(line, " (sh -c sleep 5  echo done [2J) for 1m30s") {
		t.Errorf("line %q, want the command on it with its control characters as spaces", line)
	}
}

// A log line written while the waiting line is drawn clears it first.
func TestWaitLineWriterClearsTheLine(t *testing.T) {
	out, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	w := newWaitLine(out, "job", false)
	w.drawn = true
	if _, err := w.Write([]byte("withlock: event\n")); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(out.Name())
	if string(got) != "\r\x1b[Kwithlock: event\n" || w.drawn {
		t.Fatalf("wrote %q (drawn %v); want the line cleared before the log line", got, w.drawn)
	}
}
