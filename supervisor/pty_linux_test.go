package supervisor_test

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// ptyOutput collects what the terminal shows.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *ptyOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *ptyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// TestTerminalCtrlC: withlock runs as a session leader on a pseudo-terminal,
// in the foreground. The child gets the terminal (it can read it: a
// background read would stop it with SIGTTIN), Ctrl-C typed into the terminal
// kills it with SIGINT, withlock exits 130 and holds the terminal again.
func TestTerminalCtrlC(t *testing.T) {
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	h := startHelper(t, helperOpts{
		argv:        []string{"sh", "-c", `read line; echo "got:$line"; exec sleep 100`},
		env:         []string{"HELPER_GRACE=10s"},
		stdio:       tty,
		sysProcAttr: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
	})
	tty.Close()
	out := &ptyOutput{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 1024)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	defer func() { master.Close(); <-copied }()

	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, defaultWait, "the child to echo what it read", func() bool { return strings.Contains(out.String(), "got:hello") })
	if _, err := master.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	r := h.wait(t)
	if r.Status != 130 {
		t.Errorf("status %d (%s), want 130; terminal showed %q", r.Status, r.Reason, out.String())
	}
	if !r.ForegroundAfter {
		t.Errorf("withlock's group is not the terminal's foreground group after Run; terminal showed %q", out.String())
	}
}
