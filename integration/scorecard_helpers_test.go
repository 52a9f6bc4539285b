package integration

// Shared helpers of the reliability scorecard (scorecard_*_test.go): the
// test-only builds its crash-point and negative-control rows need, a runner
// that is safe to call from many goroutines at once, and small views of a
// lock directory.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/withlock/withlock/internal/failpoint"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

// Failpoints (internal/failpoint) of the negative controls and crash rows.
const (
	tagCrashpoints  = ""                     // the plain build; WITHLOCK_FAILPOINTS=crash=<point> SIGKILLs withlock there
	tagBrokenLockID = failpoint.BrokenLockID // renew/release skip the lock_id check
	tagNoSubreaper  = failpoint.NoSubreaper  // supervisor skips subreaper and leftover cleanup
)

var (
	noraceBuild struct {
		once sync.Once
		path string
		err  error
	}
	wrapperMu sync.Mutex
)

// taggedBinary returns withlock run with the failpoints points set
// (WITHLOCK_FAILPOINTS; "" for none: the build users install, without
// -race), as an executable script that execs it with them. The norace
// build is made on first use, with the -tags of this test binary
// (testBinaryTags); these runs test what withlock does, not data races.
func taggedBinary(t *testing.T, points string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("withlock binary unavailable: %v", buildErr)
	}
	noraceBuild.once.Do(func() {
		dir, err := taggedBuildDir()
		if err != nil {
			noraceBuild.err = err
			return
		}
		noraceBuild.path = filepath.Join(dir, "withlock-norace")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		args := []string{"build", "-o", noraceBuild.path}
		if tags := testBinaryTags(); len(tags) > 0 {
			args = append(args, "-tags", strings.Join(tags, ","))
		}
		out, err := exec.CommandContext(ctx, "go", append(args, withlockPackage)...).CombinedOutput()
		if err != nil {
			noraceBuild.err = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	})
	if noraceBuild.err != nil {
		t.Fatal(noraceBuild.err)
	}
	if points == "" {
		return noraceBuild.path
	}
	wrapperMu.Lock()
	defer wrapperMu.Unlock()
	path := filepath.Join(filepath.Dir(noraceBuild.path), "withlock-"+strings.NewReplacer(",", "+", "=", "-", ":", "-").Replace(points))
	script := fmt.Sprintf("#!/bin/sh\n%s='%s' exec '%s' \"$@\"\n", failpoint.Env, points, noraceBuild.path)
	if err := os.WriteFile(path+".tmp", []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// taggedBuildDir is where test-only builds go: next to the binary TestMain
// built (removed with it), or a temp dir when WITHLOCK_TEST_BIN points
// at a prebuilt binary in a directory that is not ours.
func taggedBuildDir() (string, error) {
	if os.Getenv("WITHLOCK_TEST_BIN") == "" {
		return filepath.Dir(withlockBin), nil
	}
	return os.MkdirTemp("", "withlock-scorecard-")
}

// testBinaryTags are the -tags this test binary was built with.
func testBinaryTags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" && s.Value != "" {
			// The scorecard tests the withlock users install, which has
			// no etcd backend (that is withlock-etcd, tested by
			// integration/etcdcli): with it, a dependency's init opens
			// files before withlock's main can check `ulimit -n`.
			return slices.DeleteFunc(strings.Split(s.Value, ","), func(tag string) bool { return tag == "etcd" })
		}
	}
	return nil
}

// outcome is how one process run by execWithlock ended.
type outcome struct {
	code           int // exit status, 128+N for signal N
	stdout, stderr string
	elapsed        time.Duration
	cpu            time.Duration // user + system CPU of the process itself (its rusage)
}

// execWithlock runs bin with args and env to completion, at most deadline.
// Unlike runWithlock it never touches t, so many goroutines can call it at
// once; the caller reports the error.
func execWithlock(bin string, env []string, deadline time.Duration, args ...string) (outcome, error) {
	return startProc(bin, env, args...).wait(deadline)
}

// execProc is a process started by launch, the tests' one runner: safe to
// use from any goroutine, never touching a *testing.T (startCommand binds
// one to a test).
type execProc struct {
	cmd            *exec.Cmd
	stdout, stderr *os.File // temp files, not pipes: a leftover holding a pipe would delay Wait; nil when the caller set the stream
	outMu          sync.Mutex
	stdoutText     string // what they held, once read
	stderrText     string
	start          time.Time
	startErr       error
	done           chan struct{}
	waitErr        error
}

// startProc starts bin with args and env, capturing its output. A start
// failure is reported by wait.
func startProc(bin string, env []string, args ...string) *execProc {
	return startCmd(newCmd(bin, env, args))
}

// startCmd starts cmd (made by newCmd and adjusted) the way startProc does.
func startCmd(cmd *exec.Cmd) *execProc { return launch(cmd, "") }

// launch starts cmd with its stdout and stderr, unless the caller set them,
// in temp files in dir ("" for the system's). A start failure is kept for
// wait to report.
func launch(cmd *exec.Cmd, dir string) *execProc {
	p := &execProc{cmd: cmd, done: make(chan struct{})}
	fail := func(err error) *execProc {
		p.startErr = err
		p.output()
		close(p.done)
		return p
	}
	for _, s := range []struct {
		w    *io.Writer
		f    **os.File
		kind string
	}{{&cmd.Stdout, &p.stdout, "stdout"}, {&cmd.Stderr, &p.stderr, "stderr"}} {
		if *s.w != nil {
			continue
		}
		f, err := os.CreateTemp(dir, "withlock-"+s.kind+"-")
		if err != nil {
			return fail(err)
		}
		*s.f, *s.w = f, f
	}
	p.start = time.Now()
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	go func() { p.waitErr = cmd.Wait(); close(p.done) }()
	return p
}

// ended reports whether the process has ended (or never started).
func (p *execProc) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits at most deadline for the process to end (killing it past the
// deadline, which is an error) and returns how it ended.
func (p *execProc) wait(deadline time.Duration) (outcome, error) {
	if p.startErr != nil {
		return outcome{}, fmt.Errorf("start %s: %w", p.cmd, p.startErr)
	}
	expired := false
	if !p.ended() {
		select {
		case <-p.done:
		case <-time.After(deadline):
			expired = true
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	o := outcome{elapsed: time.Since(p.start)}
	o.stdout, o.stderr = p.output()
	if p.cmd.ProcessState == nil {
		return o, fmt.Errorf("wait %s: %w", p.cmd, p.waitErr)
	}
	o.code = exitStatus(p.cmd.ProcessState)
	o.cpu = p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
	if expired {
		return o, fmt.Errorf("%s still running after %v; killed it\nstderr: %s", p.cmd, deadline, o.stderr)
	}
	var exitErr *exec.ExitError
	if p.waitErr != nil && !errors.As(p.waitErr, &exitErr) && !errors.Is(p.waitErr, exec.ErrWaitDelay) {
		return o, fmt.Errorf("wait %s: %w", p.cmd, p.waitErr)
	}
	return o, nil
}

// output reads and removes the process's output files the first time and
// returns the saved text afterwards (wait may be called again).
func (p *execProc) output() (stdout, stderr string) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	for _, o := range []struct {
		f    **os.File
		text *string
	}{{&p.stdout, &p.stdoutText}, {&p.stderr, &p.stderrText}} {
		if *o.f == nil {
			continue
		}
		data, _ := os.ReadFile((*o.f).Name())
		closeOutput(*o.f)
		*o.f, *o.text = nil, string(data)
	}
	return p.stdoutText, p.stderrText
}

// outputSoFar is what the process has written to its output files up to
// now, while it may still run.
func (p *execProc) outputSoFar() (stdout, stderr string) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	read := func(f *os.File, text string) string {
		if f == nil {
			return text
		}
		data, _ := os.ReadFile(f.Name())
		return string(data)
	}
	return read(p.stdout, p.stdoutText), read(p.stderr, p.stderrText)
}

func closeOutput(f *os.File) {
	f.Close()
	os.Remove(f.Name())
}

// lockFile is where withlock keeps the run lock of runID in dir.
func lockFile(dir, runID string) string {
	return filepath.Join(dir, locks.Key(runID)+".lock")
}

// readLock parses the lock file of runID in dir.
func readLock(dir, runID string) (locks.Payload, error) {
	data, err := os.ReadFile(lockFile(dir, runID))
	if err != nil {
		return locks.Payload{}, err
	}
	return locks.ParsePayload(data)
}

// plantLock writes p as the lock file of runID in dir (0700 dir, 0600 file),
// the way a crashed or foreign holder would have left it.
func plantLock(t *testing.T, dir, runID string, p locks.Payload) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lockFile(dir, runID), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// expiredPayload is a lock of runID from a holder on another host whose
// TTL ran out a minute ago: stale by expiry alone.
func expiredPayload(runID string) locks.Payload {
	now := float64(time.Now().UnixNano()) / 1e9
	return locks.Payload{
		RunID: runID, LockID: "expired-" + runID, Pid: 1,
		CreatedAt: now - 120, ExpiresAt: now - 60, Host: "elsewhere.invalid",
	}
}

// staleFiles lists the <lock>.stale.* files of runID in dir.
func staleFiles(t *testing.T, dir, runID string) []string {
	t.Helper()
	matches, err := filepath.Glob(lockFile(dir, runID) + ".stale.*")
	if err != nil {
		t.Fatal(err)
	}
	return matches
}

// assertFreeNow checks the row property "an immediate non-blocking acquire
// succeeds": withlock run with no --wait takes the lock of runID at once.
func assertFreeNow(t *testing.T, dir, runID, after string) {
	t.Helper()
	_, stderr, code := runWithlock(t, "run", "--dir", dir, runID, "--", "true")
	if code != 0 {
		t.Errorf("after %s: immediate acquire of %q exited %d, want 0 (lock left held)\nstderr: %s", after, runID, code, stderr)
	}
}

// assertNoPanic fails t when withlock's stderr shows a Go panic or crash dump.
func assertNoPanic(t *testing.T, what, stderr string) {
	t.Helper()
	for _, sign := range []string{"panic:", "goroutine ", "fatal error:", "SIGSEGV"} {
		if strings.Contains(stderr, sign) {
			t.Errorf("%s: stderr shows a crash (%q):\n%s", what, sign, stderr)
			return
		}
	}
}

// zombieChildren lists zombie processes whose parent is pid.
func zombieChildren(pid int) []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		var child int
		if _, err := fmt.Sscan(e.Name(), &child); err != nil {
			continue
		}
		if p, ok := readProc(child); ok && p.state == 'Z' && p.ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// waitForFile waits until path exists or cmd ends, and reports whether it exists.
func waitForFile(path string, deadline time.Duration, ended func() bool) bool {
	pollUntil(deadline, func() bool {
		_, err := os.Stat(path)
		return err == nil || ended()
	})
	_, err := os.Stat(path)
	return err == nil
}

// readInt reads a file holding one decimal integer (a fencing token, a pid).
func readInt(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := fmt.Sscan(string(data), &n); err != nil {
		t.Fatalf("%s: %q is not a number", path, data)
	}
	return n
}

// alive reports whether pid names a live (non-zombie) process.
func alive(pid int) bool {
	p, ok := readProc(pid)
	return ok && p.state != 'Z' && syscall.Kill(pid, 0) == nil
}

// newCmd is an unstarted command for bin with env, whose output is discarded.
func newCmd(bin string, env []string, args []string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// stopProc ends p if it still runs: CONT (it may be stopped) and TERM, so
// withlock tears its child's tree down, then KILL after a bound.
func stopProc(p *execProc) {
	if p.startErr != nil || p.ended() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// binary is the withlock binary under test; it fails t when there is none.
func binary(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("withlock binary unavailable: %v", buildErr)
	}
	return withlockBin
}
