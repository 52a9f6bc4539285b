package integration

// Scorecard rows "Ctrl-C stops a shell loop", "Ctrl-Z and fg" and "nested
// teardown" (issue 15, SPEC §2 and §5), with real terminals: an interactive
// bash on a pseudo-terminal, typed into. Each row has its negative control.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyShell is an interactive bash on a pseudo-terminal, as a user's.
type ptyShell struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	copied chan struct{}
	ended  chan struct{} // closed once cmd is reaped
}

func startPtyShell(t *testing.T) *ptyShell {
	t.Helper()
	cmd := exec.Command("bash", "--norc", "--noprofile", "-i")
	cmd.Env = append(testEnv(t), "PS1=$ ", "TERM=dumb", "HISTFILE=/dev/null")
	cmd.Dir = t.TempDir()
	s := startOnPty(t, cmd)
	s.expect("$ ", 10*time.Second)
	return s
}

// startOnPty starts cmd as the session leader of a new pseudo-terminal, its
// controlling terminal and stdin, stdout and stderr, in its foreground, as
// a terminal emulator starts a user's shell.
func startOnPty(t *testing.T, cmd *exec.Cmd) *ptyShell {
	t.Helper()
	master, err := pty.Start(cmd)
	if err != nil {
		t.Fatalf("start %s on a pty: %v", cmd, err)
	}
	s := &ptyShell{t: t, master: master, cmd: cmd, copied: make(chan struct{}), ended: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.ended) }()
	go func() {
		defer close(s.copied)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		// A job left stopped or a daemon left running (a failed row)
		// would keep the pty's slave open, and the copy below would
		// never end: every process of this test goes first.
		for _, p := range markedProcesses(stateOf(t).mark) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		<-s.ended
		master.Close()
		<-s.copied
	})
	return s
}

// exitWithin waits up to d for the process on the pty to end and returns
// its exit status (128+N when killed by signal N).
func (s *ptyShell) exitWithin(d time.Duration) (code int, ok bool) {
	select {
	case <-s.ended:
		return exitStatus(s.cmd.ProcessState), true
	case <-time.After(d):
		return 0, false
	}
}

func (s *ptyShell) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func (s *ptyShell) send(text string) {
	s.t.Helper()
	if _, err := s.master.Write([]byte(text)); err != nil {
		s.t.Fatalf("type %q: %v", text, err)
	}
}

// expect waits until the terminal has shown want (after what it showed
// before the call... anywhere in the output) and fails the test past d.
func (s *ptyShell) expect(want string, d time.Duration) {
	s.t.Helper()
	if !s.shows(want, d) {
		s.t.Fatalf("terminal never showed %q within %v; it showed:\n%s", want, d, s.output())
	}
}

// shows reports whether the terminal shows want within d.
func (s *ptyShell) shows(want string, d time.Duration) bool {
	return pollUntil(d, func() bool { return strings.Contains(s.output(), want) })
}

// answer types `echo tag-$((6*7))` and waits for tag-42: the shell reads
// its terminal again (the echo of the typed line shows the unexpanded form).
func (s *ptyShell) answer(tag string, d time.Duration) bool {
	s.send("echo " + tag + "-$((6*7))\n")
	return s.shows(tag+"-42", d)
}

// loopAfterCtrlC types a three-iteration loop of withlock runs of child (a
// command that creates its first argument, then runs for seconds), presses
// Ctrl-C once during the first run and reports whether the loop went on.
func loopAfterCtrlC(t *testing.T, child string) (wentOn bool, screen string) {
	t.Helper()
	s := startPtyShell(t)
	work := t.TempDir()
	ready := filepath.Join(work, "ready")
	line := fmt.Sprintf(`for i in 1 2 3; do echo iter-$i; %s run --dir %s loop -- sh -c %s sh %s; done; echo loop-done`+"\n",
		strconv.Quote(binary(t)), strconv.Quote(filepath.Join(work, "locks")), shellQuote(child), strconv.Quote(ready))
	s.send(line)
	waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }, "the first run's command to start")
	s.send("\x03")
	if !s.answer("after", 20*time.Second) {
		t.Fatalf("the shell did not answer after Ctrl-C; terminal:\n%s", s.output())
	}
	out := s.output()
	return strings.Contains(out, "iter-2"), out
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestScorecardCtrlCStopsLoop: one Ctrl-C in `for i in 1 2 3; do withlock run
// loop -- …; done` under an interactive bash stops the loop: the command
// dies of SIGINT, and so, once the lock is released and the tree gone, does
// withlock — which is what bash looks at.
func TestScorecardCtrlCStopsLoop(t *testing.T) {
	wentOn, out := loopAfterCtrlC(t, `: >"$1"; exec sleep 5`)
	if wentOn {
		t.Errorf("one Ctrl-C did not stop the loop; terminal:\n%s", out)
	}
}

// TestScorecardCtrlCStopsLoopNegativeControl: a command that catches the
// INT and exits 130 makes withlock exit 130 (not killed by a signal), and
// bash runs on with the next iteration: the row's check sees it.
func TestScorecardCtrlCStopsLoopNegativeControl(t *testing.T) {
	wentOn, out := loopAfterCtrlC(t, `trap 'exit 130' INT; : >"$1"; sleep 1 & wait`)
	if !wentOn {
		t.Fatalf("the loop stopped although withlock exited 130: the row cannot tell; terminal:\n%s", out)
	}
}

// suspendAndFg runs tickTree under withlock from an interactive bash,
// presses Ctrl-Z, and reports whether the shell showed the job stopped with
// the whole tree stopped and answered (the terminal is not left hung), then
// resumes it with fg, checks it ticks again and ends it with Ctrl-C.
//
// viaScript runs withlock from a script (`bash script.sh`) instead, so that
// it shares the script's process group with the command.
func suspendAndFg(t *testing.T, prelude string, viaScript bool) (stopped bool, screen string) {
	t.Helper()
	s := startPtyShell(t)
	work := t.TempDir()
	tk := &ticking{main: filepath.Join(work, "main.ticks"), daemon: filepath.Join(work, "daemon.ticks")}
	line := fmt.Sprintf("%s run --dir %s z -- sh -c %s sh %s %s\n", strconv.Quote(binary(t)),
		strconv.Quote(filepath.Join(work, "locks")), shellQuote(prelude+tickTree), strconv.Quote(tk.main), strconv.Quote(tk.daemon))
	if viaScript {
		script := filepath.Join(work, "script.sh")
		if err := os.WriteFile(script, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		line = "bash " + strconv.Quote(script) + "\n"
	}
	s.send(line)
	tk.waitGrowing(t, "the tree to tick")
	s.send("\x1a")
	if !s.shows("Stopped", 10*time.Second) {
		s.send("\x03")
		return false, s.output()
	}
	if viaScript {
		// The script stops at the TSTP itself, and the shell shows it
		// stopped then; withlock stops what left the group (the daemon),
		// and itself last.
		waitFor(t, 10*time.Second, func() bool {
			for _, p := range markedProcesses(markOf(t)) {
				if strings.Contains(p.cmdline, " run --dir ") && p.state == 'T' {
					return true
				}
			}
			return false
		}, "withlock to stop itself")
	}
	if tk.grewOver(300 * time.Millisecond) {
		t.Errorf("after Ctrl-Z the shell shows the job stopped but its tree runs on")
	}
	if !s.answer("alive", 5*time.Second) {
		t.Fatalf("after Ctrl-Z the terminal does not answer; it showed:\n%s", s.output())
	}
	locks := filepath.Join(work, "locks")
	if _, stderr, code := runWithlock(t, "run", "--dir", locks, "z", "--", "true"); code != 75 {
		t.Errorf("a second run of the stopped job's lock exited %d, want 75 (still held); stderr: %s", code, stderr)
	}
	s.send("fg\n")
	tk.waitGrowing(t, "the tree to tick again after fg")
	s.send("\x03")
	if !s.answer("done", 20*time.Second) {
		t.Fatalf("after fg and Ctrl-C the shell does not answer; terminal:\n%s", s.output())
	}
	// The check above can tell: once the job is over, the same run is free.
	if _, stderr, code := runWithlock(t, "run", "--dir", locks, "z", "--", "true"); code != 0 {
		t.Errorf("a run of the lock after the job ended exited %d, want 0; stderr: %s", code, stderr)
	}
	return true, s.output()
}

// TestScorecardCtrlZFg: Ctrl-Z on the terminal (the TSTP goes to the
// command's group, which holds the terminal) stops the command's tree and
// withlock with it: bash shows the job stopped and answers, and a second
// run of the lock is refused meanwhile (exclusion holds); fg resumes it
// (the lock checked first) and it ticks again; Ctrl-C then ends it, and
// the lock is free.
func TestScorecardCtrlZFg(t *testing.T) {
	if stopped, out := suspendAndFg(t, "", false); !stopped {
		t.Errorf("Ctrl-Z: the shell never showed the job stopped; terminal:\n%s", out)
	}
}

// TestScorecardScriptCtrlZFg: the same for withlock in a script the
// interactive bash runs (`bash script.sh`), which shares the script's group
// with the command: Ctrl-Z stops the script, withlock and the command's
// whole tree (the setsid'd daemon by withlock), a second run is refused
// meanwhile, fg resumes them all and Ctrl-C ends them.
func TestScorecardScriptCtrlZFg(t *testing.T) {
	if stopped, out := suspendAndFg(t, "", true); !stopped {
		t.Errorf("Ctrl-Z: the shell never showed the script stopped; terminal:\n%s", out)
	}
}

// TestScorecardCtrlZFgNegativeControl: a command that ignores TSTP does not
// stop on Ctrl-Z, and the row's check sees no stopped job.
func TestScorecardCtrlZFgNegativeControl(t *testing.T) {
	if stopped, out := suspendAndFg(t, "trap '' TSTP\n", false); stopped {
		t.Fatalf("a TSTP-ignoring command still showed as stopped: the row cannot tell; terminal:\n%s", out)
	}
}

// nestedCleanup runs withlock inside withlock over a command whose TERM trap
// ignores further TERMs, works 1 s and then writes $1. TERM goes to all
// three processes, as systemd's KillMode=control-group sends it (the outer
// withlock then forwards one more to the inner); after is sent to the inner
// withlock once the trap runs (0: nothing). It returns the outer's status
// and whether the cleanup finished.
func nestedCleanup(t *testing.T, after syscall.Signal) (code int, finished bool) {
	t.Helper()
	work := t.TempDir()
	done, trapped, ready := filepath.Join(work, "done"), filepath.Join(work, "trapped"), filepath.Join(work, "ready")
	inner := filepath.Join(work, "inner.pid")
	cleanup := `echo $PPID >"$4"; trap 'trap "" TERM; : >"$2"; sleep 1; : >"$1"; exit 0' TERM; : >"$3"; while :; do sleep 0.05; done`
	bin := binary(t)
	p := startProc(bin, testEnv(t), "run", "--dir", filepath.Join(work, "outer"), "--grace", "10s", "outer", "--",
		bin, "run", "--dir", filepath.Join(work, "inner"), "--grace", "10s", "inner", "--",
		"sh", "-c", cleanup, "sh", done, trapped, ready, inner)
	t.Cleanup(func() { stopProc(p) })
	if !waitForFile(ready, 10*time.Second, p.ended) {
		o, _ := p.wait(time.Second)
		t.Fatalf("nested run never started: exit %d\nstderr: %s", o.code, o.stderr)
	}
	innerPid := readInt(t, inner)
	var cmdPid int
	for _, d := range liveDescendants(innerPid) {
		if d.ppid == innerPid {
			cmdPid = d.pid
		}
	}
	for _, pid := range []int{p.cmd.Process.Pid, innerPid, cmdPid} {
		if pid != 0 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	}
	if after != 0 {
		if waitForFile(trapped, 10*time.Second, p.ended) {
			_ = syscall.Kill(innerPid, after)
		}
	}
	o, err := p.wait(defaultDeadline)
	if err != nil {
		t.Fatal(err)
	}
	assertNoPanic(t, "nested", o.stderr)
	_, statErr := os.Stat(done)
	return o.code, statErr == nil
}

// TestScorecardNestedTeardown: TERM to an outer withlock, the inner one and
// its command at once: the TERM the outer forwards during its own teardown
// does not cut the inner withlock's grace, the command's cleanup finishes
// and its status (0) comes through both.
func TestScorecardNestedTeardown(t *testing.T) {
	code, finished := nestedCleanup(t, 0)
	if !finished || code != 0 {
		t.Errorf("nested teardown: outer exit %d, cleanup finished %v; want 0 and true", code, finished)
	}
}

// TestScorecardNestedTeardownNegativeControl: a second INT to the inner
// withlock during its grace (a person's second Ctrl-C) does kill at once,
// and the row's check sees the cut cleanup.
func TestScorecardNestedTeardownNegativeControl(t *testing.T) {
	code, finished := nestedCleanup(t, syscall.SIGINT)
	if finished {
		t.Fatalf("a second INT did not cut the cleanup (outer exit %d): the row cannot tell", code)
	}
	t.Logf("negative control: second INT to the inner withlock: outer exit %d, cleanup cut", code)
}
