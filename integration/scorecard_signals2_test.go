package integration

// Scorecard rows "crash signals", "every signal forwarded" and "inherited
// dispositions" (issue 15, SPEC §5): a kill-sent ABRT, SEGV, BUS, ILL, FPE,
// TRAP or SYS is forwarded like any signal — no Go runtime dump, the tree
// cleaned up, the lock released; PIPE, ALRM, XCPU, XFSZ, VTALRM, IO, PWR and
// STKFLT reach the child's group; a command started under nohup or
// `trap '' HUP INT` keeps them ignored, and one started with signals blocked
// keeps them blocked. Each row has its negative control.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// crashSignals are the signals Go turns into a crash dump when they are sent
// to a program that does not subscribe them.
var crashSignals = []syscall.Signal{
	syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGILL,
	syscall.SIGFPE, syscall.SIGTRAP, syscall.SIGSYS,
}

// grandchildTree is a command with a grandchild: sh waits on a sleep whose
// pid it writes to $1/gpid, then creates $1/ready. `ulimit -c 0`: the
// core-dumping signals it dies of leave no core file.
const grandchildTree = `ulimit -c 0; sleep 300 & echo $! >"$1/gpid"; : >"$1/ready"; wait`

// crashOutcome is what one signal to a withlock with a grandchild left.
type crashOutcome struct {
	code       int
	stderr     string
	grandchild int
	alive      bool // the grandchild still runs after withlock exited
}

// signalWithGrandchild starts withlock (bin) over grandchildTree, sends sig
// to withlock and waits for it to exit.
func signalWithGrandchild(t *testing.T, bin, dir string, sig syscall.Signal) crashOutcome {
	t.Helper()
	work := t.TempDir()
	p := startProc(bin, testEnv(t), "run", "--dir", dir, "--grace", "2s", "crash", "--", "sh", "-c", grandchildTree, "sh", work)
	t.Cleanup(func() { stopProc(p) })
	if !waitForFile(filepath.Join(work, "ready"), 10*time.Second, p.ended) {
		o, _ := p.wait(time.Second)
		t.Fatalf("tree never came up: exit %d\nstderr: %s", o.code, o.stderr)
	}
	gpid := readInt(t, filepath.Join(work, "gpid"))
	signalProc(t, p, sig)
	o, err := p.wait(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out := crashOutcome{code: o.code, stderr: o.stderr, grandchild: gpid}
	// withlock is gone; a grandchild it cleaned up is gone too (reaped by
	// withlock, the subreaper, before it exited).
	out.alive = alive(gpid)
	return out
}

// TestScorecardCrashSignals: each crash signal sent with kill to withlock
// while a grandchild runs is forwarded: the command dies of it (128+N), no
// runtime dump, the grandchild is gone and the lock is free at once.
func TestScorecardCrashSignals(t *testing.T) {
	for _, sig := range crashSignals {
		name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			o := signalWithGrandchild(t, binary(t), dir, sig)
			assertNoPanic(t, "kill -"+name, o.stderr)
			if o.code != 128+int(sig) {
				t.Errorf("kill -%s of withlock: exit %d, want %d (the command died of the forwarded signal)\nstderr: %s", name, o.code, 128+int(sig), o.stderr)
			}
			if o.alive {
				_ = syscall.Kill(o.grandchild, syscall.SIGKILL)
				t.Errorf("kill -%s of withlock: grandchild %d still alive after withlock exited", name, o.grandchild)
			}
			assertFreeNow(t, dir, "crash", "kill -"+name)
		})
	}
}

// TestScorecardCrashSignalsNegativeControl: the row's checks can fail. A
// SIGKILLed withlock (nothing can be forwarded) leaves the grandchild
// running, which the row's tree check sees; and a Go program that does not
// subscribe ABRT (gofmt, waiting on its stdin) dies of it with a runtime
// dump, which the row's dump check sees.
func TestScorecardCrashSignalsNegativeControl(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	o := signalWithGrandchild(t, binary(t), dir, syscall.SIGKILL)
	if !o.alive {
		t.Fatalf("SIGKILLed withlock: grandchild %d gone, exit %d: the row's tree check cannot fail", o.grandchild, o.code)
	}
	_ = syscall.Kill(o.grandchild, syscall.SIGKILL)

	gofmt := filepath.Join(runtime.GOROOT(), "bin", "gofmt")
	cmd := exec.Command(gofmt)
	cmd.Env = testEnv(t)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	startCommand(t, cmd)
	// gofmt has installed Go's handlers once it reads its stdin. The read
	// blocks on whichever thread runs main's goroutine, not always the
	// thread whose id is the pid: look at every thread.
	waitFor(t, 10*time.Second, func() bool {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", cmd.Process.Pid))
		for _, task := range tasks {
			if b, err := os.ReadFile(task); err == nil && strings.Contains(string(b), "pipe") {
				return true
			}
		}
		return false
	}, "gofmt to block reading its stdin")
	if err := cmd.Process.Signal(syscall.SIGABRT); err != nil {
		t.Fatal(err)
	}
	code := waitExit(t, cmd, 10*time.Second)
	_, stderr := outputOf(cmd)
	if !strings.Contains(stderr, "goroutine ") && !strings.Contains(stderr, "SIGABRT") {
		t.Fatalf("kill -ABRT of gofmt: exit %d and no dump on stderr (%q): the row's dump check cannot fail", code, stderr)
	}
	t.Logf("negative control: SIGKILLed withlock left grandchild %d; kill -ABRT of gofmt exited %d with a runtime dump", o.grandchild, code)
}

// forwardedOnly are the signals (besides those in scorecard_signals_test.go)
// that withlock passes to the child's group and that change nothing else.
var forwardedOnly = []syscall.Signal{
	syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGXCPU, syscall.SIGXFSZ,
	syscall.SIGVTALRM, syscall.SIGIO, syscall.SIGPWR, syscall.SIGSTKFLT,
}

// trapByNumber traps signal number $2, writes it to $3 and exits 42; $1 is
// the ready file, written once the trap is set.
const trapByNumber = `trap 'echo "$2" >"$3"; kill $! 2>/dev/null; exit 42' "$2"; : >"$1"; sleep 60 & wait; exit 1`

// forwardOne sends sig to withlock over a child that traps it and reports
// whether the child got it, with withlock's exit status.
func forwardOne(t *testing.T, sig syscall.Signal) (got bool, code int) {
	t.Helper()
	work := t.TempDir()
	ready, gotFile := filepath.Join(work, "ready"), filepath.Join(work, "got")
	num := strconv.Itoa(int(sig))
	p := startProc(binary(t), testEnv(t), "run", "--dir", filepath.Join(work, "locks"), "--grace", "2s", "fwd", "--",
		"sh", "-c", trapByNumber, "sh", ready, num, gotFile)
	t.Cleanup(func() { stopProc(p) })
	if !waitForFile(ready, 10*time.Second, p.ended) {
		o, _ := p.wait(time.Second)
		t.Fatalf("child never started: exit %d\nstderr: %s", o.code, o.stderr)
	}
	signalProc(t, p, sig)
	got = waitForFile(gotFile, 3*time.Second, p.ended)
	if !got {
		signalProc(t, p, syscall.SIGTERM)
	}
	o, err := p.wait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	assertNoPanic(t, unix.SignalName(sig), o.stderr)
	data, _ := os.ReadFile(gotFile)
	return strings.TrimSpace(string(data)) == num, o.code
}

// TestScorecardSignalsForwardedAll: PIPE, ALRM, XCPU, XFSZ, VTALRM, IO, PWR
// and STKFLT sent to withlock reach the child, which exits 42 by its trap.
func TestScorecardSignalsForwardedAll(t *testing.T) {
	for _, sig := range forwardedOnly {
		t.Run(strings.TrimPrefix(unix.SignalName(sig), "SIG"), func(t *testing.T) {
			if got, code := forwardOne(t, sig); !got || code != 42 {
				t.Errorf("%s to withlock: child got it %v, withlock exited %d; want true and the child's 42", unix.SignalName(sig), got, code)
			}
		})
	}
}

// TestScorecardSignalsForwardedNegativeControl: a signal withlock cannot
// forward — PROF, which the Go runtime's profiler consumes — never reaches
// the trap, and the row's check sees it.
func TestScorecardSignalsForwardedNegativeControl(t *testing.T) {
	if got, code := forwardOne(t, syscall.SIGPROF); got {
		t.Fatalf("SIGPROF reached the child (exit %d): the row's check cannot tell a dropped signal", code)
	}
}

// sigField parses a "<name>:\t<hex>" line of /proc/<pid>/status out of text.
func sigField(t *testing.T, text, name string) uint64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", name, v, err)
			}
			return m
		}
	}
	t.Fatalf("no %s line in %q", name, text)
	return 0
}

func has(mask uint64, sig syscall.Signal) bool { return mask&(1<<(uint(sig)-1)) != 0 }

// childStatus runs `withlock run … -- grep Sig /proc/self/status` through
// wrap (a command that execs its arguments) and returns the child's lines.
func childStatus(t *testing.T, wrap ...string) string {
	t.Helper()
	args := append(append([]string{}, wrap...), binary(t), "run", "--dir", filepath.Join(t.TempDir(), "locks"), "inherit", "--",
		"grep", "^Sig", "/proc/self/status")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = t.TempDir() // nohup writes nohup.out here when stdout is a terminal
	stdout, stderr, code := runCommand(t, cmd, defaultDeadline)
	if code != 0 {
		t.Fatalf("%v: exit %d\nstderr: %s", args, code, stderr)
	}
	return stdout
}

// TestScorecardInheritedIgnores: under nohup the command keeps HUP ignored,
// under `trap "" HUP INT` both (SigIgn of the command itself).
func TestScorecardInheritedIgnores(t *testing.T) {
	if ign := sigField(t, childStatus(t, "nohup"), "SigIgn"); !has(ign, syscall.SIGHUP) {
		t.Errorf("nohup withlock run … : the command's SigIgn %016x lacks HUP", ign)
	}
	trap := []string{"sh", "-c", `trap '' HUP INT; exec "$@"`, "sh"}
	if ign := sigField(t, childStatus(t, trap...), "SigIgn"); !has(ign, syscall.SIGHUP) || !has(ign, syscall.SIGINT) {
		t.Errorf("trap '' HUP INT; withlock run … : the command's SigIgn %016x lacks HUP or INT", ign)
	}
}

// TestScorecardInheritedIgnoresNegativeControl: without nohup or the trap
// the command ignores neither, so the row's check can fail.
func TestScorecardInheritedIgnoresNegativeControl(t *testing.T) {
	if ign := sigField(t, childStatus(t, "env"), "SigIgn"); has(ign, syscall.SIGHUP) || has(ign, syscall.SIGINT) {
		t.Fatalf("plain withlock run: the command's SigIgn %016x has HUP or INT: the row cannot tell", ign)
	}
}

// TestScorecardIgnoredHupDoesNotStop: under nohup a HUP sent to withlock
// changes nothing: the command runs to its end and its status is passed
// through (withlock does not act on a signal it was told to ignore).
func TestScorecardIgnoredHupDoesNotStop(t *testing.T) {
	work := t.TempDir()
	ready := filepath.Join(work, "ready")
	cmd := exec.Command("nohup", binary(t), "run", "--dir", filepath.Join(work, "locks"), "hup", "--",
		"sh", "-c", `: >"$1"; sleep 0.5; exit 7`, "sh", ready)
	cmd.Dir = work
	startCommand(t, cmd)
	waitFor(t, 10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }, "the command to start")
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, defaultDeadline); code != 7 {
		_, stderr := outputOf(cmd)
		t.Errorf("HUP to a withlock under nohup: exit %d, want the command's 7\nstderr: %s", code, stderr)
	}
}

// blockSignals is a wrapper that starts its arguments with USR1, USR2 and
// PIPE blocked, as a job runner that blocks signals starts its jobs.
var blockSignals = []string{"perl", "-MPOSIX", "-e", `sigprocmask(SIG_BLOCK, POSIX::SigSet->new(10, 12, 13)) or die "sigprocmask: $!"; exec @ARGV or die "exec: $!"`}

// TestScorecardInheritedMask: started with USR1, USR2 and PIPE blocked,
// withlock starts its command with them blocked (SigBlk of the command).
func TestScorecardInheritedMask(t *testing.T) {
	blk := sigField(t, childStatus(t, blockSignals...), "SigBlk")
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE} {
		if !has(blk, sig) {
			t.Errorf("withlock started with USR1 USR2 PIPE blocked: the command's SigBlk %016x lacks %s", blk, unix.SignalName(sig))
		}
	}
}

// TestScorecardInheritedMaskNegativeControl: started with nothing blocked,
// the command has nothing blocked: the row's check can fail.
func TestScorecardInheritedMaskNegativeControl(t *testing.T) {
	if blk := sigField(t, childStatus(t, "env"), "SigBlk"); blk != 0 {
		t.Fatalf("plain withlock run: the command's SigBlk is %016x, want 0: the row cannot tell", blk)
	}
}
