package supervisor_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/withlock/withlock/internal/failpoint"
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

// copyPty collects what the terminal on master shows, until the test ends.
func copyPty(t *testing.T, master *os.File) *ptyOutput {
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
	t.Cleanup(func() { master.Close(); <-copied })
	return out
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
	out := copyPty(t, master)

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

// TestTerminalSharedGroup: withlock run by a script on a terminal (here a
// sh that leads the session and its group, and traps INT) does not lead
// its group, so the child stays in it: it reads the terminal, and one
// Ctrl-C reaches the script too, which sees withlock end with 130. With
// the failpoint own-group (the old way) the child's own group takes the
// terminal and the script never sees the INT.
func TestTerminalSharedGroup(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("own-group=%v", own), func(t *testing.T) {
			master, tty, err := pty.Open()
			if err != nil {
				t.Fatalf("open pty: %v", err)
			}
			env := []string{"HELPER_GRACE=10s"}
			if own {
				env = append(env, failpoint.Env+"="+failpoint.OwnGroup)
			}
			h := startHelper(t, helperOpts{
				argv:        []string{"sh", "-c", `read line; echo "got:$line"; exec sleep 100`},
				env:         env,
				stdio:       tty,
				sysProcAttr: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
				wrap:        []string{"sh", "-c", `trap 'echo script-saw-INT' INT; "$@"; echo "script-after-$?"`, "sh"},
			})
			tty.Close()
			out := copyPty(t, master)
			if _, err := master.Write([]byte("hello\n")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, defaultWait, "the child to echo what it read", func() bool { return strings.Contains(out.String(), "got:hello") })
			var child int
			waitFor(t, defaultWait, "the child's sleep", func() bool {
				for pid := range withToken(h.token) {
					if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); string(b) == "sleep\x00100\x00" {
						child = pid
						return true
					}
				}
				return false
			})
			pgid, err := syscall.Getpgid(child)
			if err != nil {
				t.Fatal(err)
			}
			if shared := pgid == h.cmd.Process.Pid; shared == own {
				t.Errorf("the child's group is %d, the script's %d: shared %v, want %v", pgid, h.cmd.Process.Pid, shared, !own)
			}
			if _, err := master.Write([]byte{0x03}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, defaultWait, "the script to go on", func() bool { return strings.Contains(out.String(), "script-after-130") })
			if saw := strings.Contains(out.String(), "script-saw-INT"); saw == own {
				t.Errorf("the script saw the Ctrl-C: %v, want %v; terminal showed %q", saw, !own, out.String())
			}
			if r := h.readResult(t); r.Status != 130 || r.Leftovers != 0 {
				t.Errorf("status %d, %d leftovers; want 130 and none", r.Status, r.Leftovers)
			}
		})
	}
}
