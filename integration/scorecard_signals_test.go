package integration

// Scorecard row "signals": every forwardable signal reaches a child that
// traps it; exit codes 0–255 pass through exactly; a child killed by signal
// N makes withlock exit 128+N.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var forwardable = []syscall.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT,
}

// trapOne traps $2 (a signal name), writes it to $3 and exits 42; $1 is
// the ready file, written once the trap is set.
const trapOne = `trap 'echo "$2" >"$3"; kill $! 2>/dev/null; exit 42' "$2"; : >"$1"; sleep 60 & wait; exit 1`

func TestScorecardSignalsForwarded(t *testing.T) {
	for _, sig := range forwardable {
		name := strings.TrimPrefix(unix.SignalName(sig), "SIG")
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			ready, got := filepath.Join(work, "ready"), filepath.Join(work, "got")
			p := startProc(binary(t), testEnv(t), "run", "--dir", filepath.Join(work, "locks"), "--grace", "5s", "sig", "--",
				"sh", "-c", trapOne, "sh", ready, name, got)
			t.Cleanup(func() { stopProc(p) })
			if !waitForFile(ready, 10*time.Second, p.ended) {
				o, _ := p.wait(time.Second)
				t.Fatalf("child never started: exit %d\nstderr: %s", o.code, o.stderr)
			}
			signalProc(t, p, sig)
			o, err := p.wait(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(got)
			if strings.TrimSpace(string(data)) != name || o.code != 42 {
				t.Errorf("SIG%s to withlock: child recorded %q and withlock exited %d; want %q and the child's 42\nstderr: %s",
					name, strings.TrimSpace(string(data)), o.code, name, o.stderr)
			}
			assertNoPanic(t, name, o.stderr)
		})
	}
}

// TestScorecardExitCodes: `sh -c 'exit N'` under withlock exits N, for all
// 256 values of N.
func TestScorecardExitCodes(t *testing.T) {
	codes := exitCodeSample()
	env, bin := testEnv(t), binary(t)
	dir := filepath.Join(t.TempDir(), "locks")
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, n := range codes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			o, err := execWithlock(bin, env, defaultDeadline, "run", "--dir", dir, fmt.Sprintf("code-%d", n), "--", "sh", "-c", fmt.Sprintf("exit %d", n))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Error(err)
			case o.code != n:
				t.Errorf("child exit %d: withlock exited %d\nstderr: %s", n, o.code, o.stderr)
			case o.stderr != "":
				t.Errorf("child exit %d: withlock printed %q, want nothing", n, o.stderr)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d exit codes passed through exactly", len(codes))
}

// exitCodeSample is every code 0–255: cheap enough (a few seconds) to run
// in full at CI size too.
func exitCodeSample() []int {
	codes := make([]int, 256)
	for i := range codes {
		codes[i] = i
	}
	return codes
}

// TestScorecardDeathBySignal: a child that kills itself with signal N makes
// withlock exit 128+N, for every signal whose default action ends a process.
func TestScorecardDeathBySignal(t *testing.T) {
	env := testEnv(t)
	work := t.TempDir()
	dir := filepath.Join(work, "locks")
	n := 0
	for sig := syscall.Signal(1); sig < 32; sig++ {
		if !terminatesByDefault(sig) {
			continue
		}
		n++
		// ulimit -c 0: the core-dumping signals must not leave core files
		cmd := newCmd(binary(t), env, []string{"run", "--dir", dir, "die", "--", "sh", "-c", fmt.Sprintf("ulimit -c 0; kill -%d $$; sleep 10", int(sig))})
		cmd.Dir = work
		o, err := startCmd(cmd).wait(defaultDeadline)
		if err != nil {
			t.Error(err)
			continue
		}
		if o.code != 128+int(sig) {
			t.Errorf("child killed by %s (%d): withlock exited %d, want %d\nstderr: %s", unix.SignalName(sig), sig, o.code, 128+int(sig), o.stderr)
		}
	}
	t.Logf("%d signals: withlock exited 128+N for each", n)
}

// terminatesByDefault: the signals whose default action ends the process
// (not ignored, not stop/continue).
func terminatesByDefault(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGCHLD, syscall.SIGURG, syscall.SIGWINCH, syscall.SIGCONT,
		syscall.SIGSTOP, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU:
		return false
	}
	return true
}
