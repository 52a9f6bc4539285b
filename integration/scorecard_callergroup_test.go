package integration

// Scorecard rows of issue 30, SPEC §5 "On a terminal withlock is
// invisible", for callers that are no job-control shell: a script run as
// `bash script.sh` or `bash -c '…'`, make, `sh -c` from a Python program,
// each on a real pseudo-terminal. withlock does not lead its process group
// there, so the command stays in it, the caller's: one Ctrl-C reaches the
// caller too and its loop stops; the command reads the terminal; one key
// press is one signal to the command. And in the background withlock never
// stops for the terminal. The negative controls set the failpoint
// own-group, which gives the command a group of its own and the terminal
// as before: the caller then never sees the Ctrl-C.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
)

// callers are the ways a program that is no job-control shell runs a shell
// snippet: the snippet is in script (a file) and in text.
var callers = []struct {
	name string
	argv func(script, text string) []string
}{
	{"bash script", func(script, _ string) []string { return []string{"bash", script} }},
	{"bash -c", func(_, text string) []string { return []string{"bash", "-c", text} }},
	{"make", func(script, text string) []string {
		mk := filepath.Join(filepath.Dir(script), "Makefile")
		recipe := "all:\n\t@" + strings.ReplaceAll(strings.ReplaceAll(text, "$", "$$"), "\n", "; ") + "\n"
		if err := os.WriteFile(mk, []byte(recipe), 0o600); err != nil {
			panic(err)
		}
		return []string{"make", "-s", "-f", mk}
	}},
	{"python sh -c", func(_, text string) []string {
		return []string{"python3", "-c", "import subprocess, sys; sys.exit(subprocess.call(['sh', '-c', sys.argv[1]]))", text}
	}},
}

// onPty runs argv as the session leader of a new pty, its foreground job,
// with t's environment and extra variables.
func onPty(t *testing.T, argv []string, extra ...string) *ptyShell {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(testEnv(t), "TERM=dumb"), extra...)
	cmd.Dir = t.TempDir()
	return startOnPty(t, cmd)
}

// snippet writes text to a script file in work and returns its path.
func snippet(t *testing.T, work, text string) string {
	t.Helper()
	path := filepath.Join(work, "script.sh")
	if err := os.WriteFile(path, []byte(text+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withlockRun is the start of a `withlock run` command line, for snippets.
func withlockRun(t *testing.T, locks string) string {
	return fmt.Sprintf("%s run --dir %s", strconv.Quote(binary(t)), strconv.Quote(locks))
}

// scriptLoopAfterCtrlC runs the three-iteration loop of issue 30 under
// caller, each run's command a tree (a grandchild that ignores INT, as
// background jobs of a script do, and the sleep), presses Ctrl-C once
// during the first run and reports whether the loop went on, how soon the
// caller ended, and the screen.
//
// nested runs the command under a second, inner withlock; key is the key
// pressed (Ctrl-C, or Ctrl-\ for QUIT).
func scriptLoopAfterCtrlC(t *testing.T, argv func(script, text string) []string, nested bool, key string, extra ...string) (wentOn bool, took time.Duration, screen string) {
	t.Helper()
	work := t.TempDir()
	ready := filepath.Join(work, "ready")
	run := withlockRun(t, filepath.Join(work, "locks")) + " loop --"
	if nested {
		run += " " + withlockRun(t, filepath.Join(work, "inner")) + " inner --"
	}
	text := fmt.Sprintf(`for i in 1 2 3; do echo iter-$i; %s sh -c 'sleep 30 & : >"$1"; exec sleep 5' sh %s; done; echo loop-done`,
		run, strconv.Quote(ready))
	s := onPty(t, argv(snippet(t, work, text), text), extra...)
	waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }, "the first run's command to start")
	s.send(key)
	start := time.Now()
	if _, ended := s.exitWithin(1500 * time.Millisecond); ended {
		took = time.Since(start)
		return strings.Contains(s.output(), "iter-2"), took, s.output()
	}
	took = time.Since(start)
	s.shows("iter-2", 5*time.Second)
	return strings.Contains(s.output(), "iter-2"), took, s.output()
}

// TestScorecardScriptCtrlCStopsLoop: one Ctrl-C stops a script's loop of
// withlock runs within a second, under bash (a script and -c), make and
// `sh -c` from Python, and leaves no process of the tree: the caller got
// the SIGINT too, as it would running the command itself.
func TestScorecardScriptCtrlCStopsLoop(t *testing.T) {
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			wentOn, took, out := scriptLoopAfterCtrlC(t, c.argv, false, "\x03")
			if wentOn || took > time.Second {
				t.Errorf("one Ctrl-C: loop went on %v, caller ended after %v (want no and <= 1s); terminal:\n%s", wentOn, took, out)
			}
			assertNoneLeft(t)
		})
	}
	t.Run("nested withlock", func(t *testing.T) {
		wentOn, took, out := scriptLoopAfterCtrlC(t, callers[0].argv, true, "\x03")
		if wentOn || took > time.Second {
			t.Errorf("one Ctrl-C: loop went on %v, caller ended after %v (want no and <= 1s); terminal:\n%s", wentOn, took, out)
		}
		assertNoneLeft(t)
	})
	// Ctrl-\ does to the script what it does without withlock: bash
	// ignores QUIT itself, so the command dies of it (withlock after it,
	// which bash reports as "Quit") and the loop goes on to iteration 2.
	t.Run("bash script, Ctrl-\\", func(t *testing.T) {
		wentOn, _, out := scriptLoopAfterCtrlC(t, callers[0].argv, false, "\x1c")
		if !wentOn || !strings.Contains(out, "Quit") {
			t.Errorf("one Ctrl-\\: want withlock dead of QUIT and the loop going on, as without withlock; terminal:\n%s", out)
		}
	})
}

// assertNoneLeft checks, soon after the caller on the pty ended, that no
// process of the test is left (the pty's cleanup would KILL them unseen).
func assertNoneLeft(t *testing.T) {
	t.Helper()
	if !pollUntil(2*time.Second, func() bool { return len(markedProcesses(markOf(t))) == 0 }) {
		t.Errorf("processes of the tree outlive the caller: %v", markedProcesses(markOf(t)))
	}
}

// TestScorecardScriptCtrlCStopsLoopNegativeControl: with the failpoint
// own-group the command gets its own group and the terminal, the caller
// never sees the Ctrl-C, and the loop goes on (issue 30 as filed).
func TestScorecardScriptCtrlCStopsLoopNegativeControl(t *testing.T) {
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			wentOn, took, out := scriptLoopAfterCtrlC(t, c.argv, false, "\x03", failpoint.Env+"="+failpoint.OwnGroup)
			if !wentOn {
				t.Fatalf("own-group: the loop stopped (after %v): the row cannot tell; terminal:\n%s", took, out)
			}
		})
	}
}

// TestScorecardScriptTeardown: sharing the script's group, --timeout and a
// lost lock (--on-lock-lost kill) still end the command's whole tree (a
// grandchild in the group, a setsid'd one) and nothing else: the script
// runs on and prints withlock's status, 124 and 76.
func TestScorecardScriptTeardown(t *testing.T) {
	for _, c := range []struct {
		name, flags string
		want        int
	}{{"timeout", "--timeout 1s", 124}, {"lock lost", "--ttl 1s", 76}} {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			locks, ready := filepath.Join(work, "locks"), filepath.Join(work, "ready")
			text := fmt.Sprintf(`%s --grace 1s %s job -- sh -c 'sleep 30 & setsid sleep 30 & : >"$1"; exec sleep 30' sh %s; echo "rc-$?"`,
				withlockRun(t, locks), c.flags, strconv.Quote(ready))
			s := onPty(t, []string{"bash", snippet(t, work, text)})
			waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }, "the command to start")
			if c.want == 76 {
				if _, stderr, code := runWithlock(t, "break", "--dir", locks, "--force", "job"); code != 0 {
					t.Fatalf("withlock break --force job: exit %d\nstderr: %s", code, stderr)
				}
			}
			s.expect(fmt.Sprintf("rc-%d", c.want), 15*time.Second)
			if code, ended := s.exitWithin(5 * time.Second); !ended || code != 0 {
				t.Errorf("the script ended %v with %d, want 0 (it was not signalled)", ended, code)
			}
			assertNoneLeft(t)
		})
	}
}

// TestScorecardScriptTreeHoldsLock: sharing the script's group, a withlock
// SIGKILLed while a setsid'd descendant of its command lives leaves the
// lock held by that tree: the next run is refused (75) naming it.
func TestScorecardScriptTreeHoldsLock(t *testing.T) {
	work := t.TempDir()
	locks, pidFile := filepath.Join(work, "locks"), filepath.Join(work, "survivor.pid")
	text := fmt.Sprintf(`%s job -- sh -c 'setsid sh -c "echo \$\$ >\"\$1\"; exec sleep 300" sh "$1" & wait' sh %s; echo "rc-$?"`,
		withlockRun(t, locks), strconv.Quote(pidFile))
	s := onPty(t, []string{"bash", snippet(t, work, text)})
	var survivor int
	waitFor(t, 10*time.Second, func() bool {
		b, _ := os.ReadFile(pidFile)
		_, err := fmt.Sscan(string(b), &survivor)
		return err == nil && survivor > 0
	}, "the survivor's pid")
	t.Cleanup(func() { _ = syscall.Kill(survivor, syscall.SIGKILL) })
	// The survivor's parent is the command's sh, whose parent is withlock.
	sv, _ := readProc(survivor)
	cmdSh, _ := readProc(sv.ppid)
	wl, _ := readProc(cmdSh.ppid)
	if !strings.Contains(wl.cmdline, "run --dir") {
		t.Fatalf("pid %d is not withlock: %v (survivor %d, its parent %v)", wl.pid, wl, survivor, cmdSh)
	}
	if err := syscall.Kill(wl.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.expect("rc-137", 10*time.Second)
	_, stderr, code := runWithlock(t, "run", "--dir", locks, "job", "--", "true")
	if code != 75 || !strings.Contains(stderr, strconv.Itoa(survivor)) {
		t.Errorf("next run after withlock was killed: exit %d, stderr %q; want 75 naming pid %d", code, stderr, survivor)
	}
}

// TestScorecardScriptCommandReadsTerminal: a script's command, sharing the
// caller's group in the foreground, reads a line typed on the terminal.
func TestScorecardScriptCommandReadsTerminal(t *testing.T) {
	work := t.TempDir()
	ready := filepath.Join(work, "ready")
	text := fmt.Sprintf(`%s read -- sh -c ': >"$1"; read line; echo "got:$line"' sh %s; echo "after-$?"`,
		withlockRun(t, filepath.Join(work, "locks")), strconv.Quote(ready))
	s := onPty(t, []string{"bash", snippet(t, work, text)})
	waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }, "the command to start")
	s.send("hello\n")
	s.expect("got:hello", 10*time.Second)
	s.expect("after-0", 10*time.Second)
}

// TestScorecardScriptOneIntPerKeyPress: a command that traps INT counts
// one INT per Ctrl-C: the kernel delivers it to the group withlock shares,
// and withlock forwards no copy, nor starts a teardown; the script runs on
// once the command exits 0.
func TestScorecardScriptOneIntPerKeyPress(t *testing.T) {
	work := t.TempDir()
	count, ready, stop := filepath.Join(work, "count"), filepath.Join(work, "ready"), filepath.Join(work, "stop")
	text := fmt.Sprintf(`%s --grace 10s ints -- sh -c 'trap "echo int >>\"\$1\"" INT; : >"$2"; while [ ! -e "$3" ]; do sleep 0.05; done' sh %s %s %s; echo "after-$?"`,
		withlockRun(t, filepath.Join(work, "locks")), strconv.Quote(count), strconv.Quote(ready), strconv.Quote(stop))
	s := onPty(t, []string{"bash", snippet(t, work, text)})
	waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }, "the command to start")
	ints := func() int { b, _ := os.ReadFile(count); return strings.Count(string(b), "int") }
	for press := 1; press <= 3; press++ {
		s.send("\x03")
		waitFor(t, 5*time.Second, func() bool { return ints() >= press }, fmt.Sprintf("INT number %d", press))
		// An observation window, not a wait: a forwarded copy would
		// arrive within it.
		time.Sleep(300 * time.Millisecond)
		if n := ints(); n != press {
			t.Fatalf("after %d Ctrl-C the command counted %d INTs; terminal:\n%s", press, n, s.output())
		}
	}
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s.expect("after-0", 10*time.Second)
}

// bgNeverStops starts line (a command ending in &) in an interactive bash,
// watching the job whose pid it echoes as bgpid-N, and reports whether it
// or any process of its tree was seen stopped before it ended; the shell must answer while it
// runs (withlock never took its terminal).
func bgNeverStops(t *testing.T, line string) (stopped bool, screen string) {
	t.Helper()
	s := startPtyShell(t)
	s.send(line + " echo bgpid-$!\n")
	var pid int
	waitFor(t, 10*time.Second, func() bool {
		out := s.output()
		i := strings.LastIndex(out, "bgpid-")
		if i < 0 {
			return false
		}
		_, err := fmt.Sscanf(out[i:], "bgpid-%d", &pid)
		return err == nil
	}, "the background job's pid")
	if !s.answer("shell", 5*time.Second) {
		t.Fatalf("the shell does not answer while withlock runs in the background; terminal:\n%s", s.output())
	}
	// Until the job ends (or 10 s), look at it and its tree every 10 ms.
	pollUntil(10*time.Second, func() bool {
		p, ok := readProc(pid)
		if !ok || p.state == 'Z' {
			return true
		}
		for _, d := range append(liveDescendants(pid), p) {
			if d.state == 'T' {
				stopped = true
			}
		}
		return stopped
	})
	return stopped, s.output()
}

// TestScorecardBackgroundNeverStops: `withlock … &` from an interactive
// bash (withlock leads its background group) and a script run in the
// background (withlock shares the script's background group) never stop
// for the terminal: withlock does not take it, and the job runs to its end.
func TestScorecardBackgroundNeverStops(t *testing.T) {
	work := t.TempDir()
	wl := withlockRun(t, filepath.Join(work, "locks"))
	script := filepath.Join(work, "bg.sh")
	if err := os.WriteFile(script, []byte(wl+" bgs -- sh -c 'sleep 1; echo bgs-done'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, line := range map[string]string{
		"withlock &":       wl + " bg -- sh -c 'sleep 1; echo bg-done' &",
		"bash script.sh &": "bash " + strconv.Quote(script) + " &",
	} {
		t.Run(name, func(t *testing.T) {
			if stopped, out := bgNeverStops(t, line); stopped {
				t.Errorf("the background job stopped; terminal:\n%s", out)
			}
		})
	}
}

// TestScorecardBackgroundNeverStopsNegativeControl: a background command
// that reads the terminal does stop (SIGTTIN, as it would without
// withlock), and withlock with it: the row's check sees a stop.
func TestScorecardBackgroundNeverStopsNegativeControl(t *testing.T) {
	wl := withlockRun(t, filepath.Join(t.TempDir(), "locks"))
	if stopped, out := bgNeverStops(t, wl+" bgr -- sh -c 'read x' &"); !stopped {
		t.Fatalf("a background reader of the terminal did not stop: the row cannot tell; terminal:\n%s", out)
	}
}

// ctrlZTicking runs tickTree under withlock on a pty, presses Ctrl-Z and
// reports whether the tree (the command and its setsid'd daemon) ticked on
// through every 300 ms window of the next 2 s (past stopWait, after which
// a suspending withlock stops whatever did not stop): an observation
// window, not a wait. how is who runs withlock: "script" (a `bash -c`
// script leads the pty's session; withlock shares its group), "withlock"
// (withlock itself leads the session) or "shell" (an interactive bash
// runs that script as a job, whose group is no orphan).
func ctrlZTicking(t *testing.T, how string) (s *ptyShell, ticked bool) {
	t.Helper()
	work := t.TempDir()
	tk := &ticking{main: filepath.Join(work, "main.ticks"), daemon: filepath.Join(work, "daemon.ticks")}
	argv := []string{binary(t), "run", "--dir", filepath.Join(work, "locks"), "z", "--", "sh", "-c", tickTree, "sh", tk.main, tk.daemon}
	script := append([]string{"bash", "-c", `"$@"; echo "rc-$?"`, "bash"}, argv...)
	switch how {
	case "withlock":
		s = onPty(t, argv)
	case "script":
		s = onPty(t, script)
	default:
		s = startPtyShell(t)
		for i := range script {
			script[i] = shellQuote(script[i])
		}
		s.send(strings.Join(script, " ") + "\n")
	}
	tk.waitGrowing(t, "the tree to tick")
	s.send("\x1a")
	ticked = true
	for end := time.Now().Add(2 * time.Second); ticked && time.Now().Before(end); {
		before := tk.sizes()
		time.Sleep(300 * time.Millisecond)
		now := tk.sizes()
		ticked = now[0] > before[0] && now[1] > before[1]
	}
	return s, ticked
}

// TestScorecardOrphanedCtrlZ: on a terminal that no job-control shell
// watches (`tmux new-window 'bash deploy.sh'`, `ssh -t host ./deploy.sh`,
// Python's pty.spawn: the caller leads the session), the caller's process
// group is orphaned, and the kernel discards the terminal's TSTP for it,
// as nobody could continue it. Ctrl-Z then does nothing, as it does to
// the caller and to the command run without withlock (or under flock):
// withlock stops neither the tree nor itself, the tree ticks on, and one
// Ctrl-C still ends the run with nothing left.
func TestScorecardOrphanedCtrlZ(t *testing.T) {
	for _, how := range []string{"script", "withlock"} {
		t.Run(how, func(t *testing.T) {
			s, ticked := ctrlZTicking(t, how)
			if !ticked {
				t.Fatalf("Ctrl-Z with nobody to continue the job stopped the tree; terminal:\n%s", s.output())
			}
			s.send("\x03")
			if _, ended := s.exitWithin(5 * time.Second); !ended {
				t.Fatalf("Ctrl-C after Ctrl-Z did not end the run; terminal:\n%s", s.output())
			}
			assertNoneLeft(t)
		})
	}
}

// TestScorecardOrphanedCtrlZNegativeControl: the same script run by an
// interactive bash is a job of its own group, which bash can continue: Ctrl-Z
// stops it, tree and all, and the row's check sees it stopped.
func TestScorecardOrphanedCtrlZNegativeControl(t *testing.T) {
	if s, ticked := ctrlZTicking(t, "shell"); ticked {
		t.Fatalf("Ctrl-Z under a job-control shell did not stop the tree: the row cannot tell; terminal:\n%s", s.output())
	}
}

// ctrlZWaiting starts a holder of a lock, then a second withlock that
// waits for it on a pty (how as for ctrlZTicking: "withlock" leads the
// pty's session, "shell" is a job of an interactive bash), presses Ctrl-Z
// once it waits, gives a stop up to 1 s to show (an observation window),
// ends the holder and reports whether the waiter then ran its command.
func ctrlZWaiting(t *testing.T, how string) (ran bool, screen string) {
	t.Helper()
	work := t.TempDir()
	locks, ready := filepath.Join(work, "locks"), filepath.Join(work, "ready")
	holder := startProc(binary(t), testEnv(t), "run", "--dir", locks, "w", "--", "sh", "-c", `: >"$1"; exec sleep 30`, "sh", ready)
	t.Cleanup(func() { stopProc(holder) })
	if !waitForFile(ready, 10*time.Second, holder.ended) {
		t.Fatal("the holder never started")
	}
	argv := []string{binary(t), "run", "--dir", locks, "--wait", "30s", "w", "--", "sh", "-c", "echo waiter-$((6*7))"}
	var s *ptyShell
	if how == "withlock" {
		s = onPty(t, argv)
	} else {
		s = startPtyShell(t)
		for i := range argv {
			argv[i] = shellQuote(argv[i])
		}
		s.send(strings.Join(argv, " ") + "\n")
	}
	s.expect("waiting", 10*time.Second)
	s.send("\x1a")
	pollUntil(time.Second, func() bool {
		for _, p := range markedProcesses(markOf(t)) {
			if strings.Contains(p.cmdline, "--wait 30s") && p.state == 'T' {
				return true
			}
		}
		return false
	})
	stopProc(holder)
	return s.shows("waiter-42", 5*time.Second), s.output()
}

// TestScorecardOrphanedCtrlZWhileWaiting: Ctrl-Z while withlock waits for
// the lock in an orphaned group (see TestScorecardOrphanedCtrlZ) does not
// stop it: once the holder ends, it takes the lock and runs its command.
func TestScorecardOrphanedCtrlZWhileWaiting(t *testing.T) {
	if ran, out := ctrlZWaiting(t, "withlock"); !ran {
		t.Fatalf("after Ctrl-Z with nobody to continue it, the waiter never ran its command; terminal:\n%s", out)
	}
}

// TestScorecardOrphanedCtrlZWhileWaitingNegativeControl: as a job of an
// interactive bash the waiter does stop at Ctrl-Z, and the row's check sees
// that it did not run its command.
func TestScorecardOrphanedCtrlZWhileWaitingNegativeControl(t *testing.T) {
	if ran, out := ctrlZWaiting(t, "shell"); ran {
		t.Fatalf("a waiter stopped by Ctrl-Z under bash ran its command: the row cannot tell; terminal:\n%s", out)
	}
}
