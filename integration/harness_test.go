package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/withlock/withlock/internal/testenv"
	"github.com/withlock/withlock/internal/testwait"
)

// defaultDeadline bounds one withlock run started by runWithlock.
const defaultDeadline = 30 * time.Second

// markVar is set on every process the helpers start. Its value is unique to
// the test (and to this test binary's run), so /proc/*/environ tells which
// processes a test left behind, however they were reparented.
const markVar = "WITHLOCK_TEST_MARK"

// leftoverDeadline is how long a test's processes get to disappear after the
// test before the leftover check fails it.
const leftoverDeadline = 10 * time.Second

// scaled returns n, or full when WITHLOCK_STRESS=1 (make stress).
func scaled(n, full int) int {
	if os.Getenv("WITHLOCK_STRESS") == "1" {
		return full
	}
	return n
}

// runToken tells this run's marks from those of another test binary running at the same time.
var runToken = func() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}()

// testState is what the helpers keep per test.
type testState struct {
	mark       string
	runtimeDir string // XDG_RUNTIME_DIR of the test's processes
	outputDir  string // their captured stdout and stderr
}

var states sync.Map // *testing.T -> *testState

// stateOf returns t's mark and private XDG_RUNTIME_DIR, registering (on first
// use) the check that no marked process outlives the test. Cleanups run last
// registered first, so this check runs after the test's own cleanups.
func stateOf(t *testing.T) *testState {
	t.Helper()
	if s, ok := states.Load(t); ok {
		return s.(*testState)
	}
	s := &testState{mark: runToken + "/" + t.Name(), runtimeDir: t.TempDir(), outputDir: t.TempDir()}
	states.Store(t, s)
	t.Cleanup(func() {
		defer states.Delete(t)
		checkNoLeftovers(t, s.mark)
	})
	return s
}

// markOf returns the value of WITHLOCK_TEST_MARK for t's processes.
func markOf(t *testing.T) string {
	t.Helper()
	return stateOf(t).mark
}

// testEnv is the environment for processes a test starts: this process's,
// without variables that would point withlock at shared state, with t's mark,
// and with XDG_RUNTIME_DIR set to a fresh directory, WITHLOCK_DIR to a
// directory in it and WITHLOCK_SCOPE_FILE to a registry there, so that a
// run without --dir or a scope without --scope-file never touches the
// machine's real locks (the defaults, in /run/withlock or /tmp/withlock-UID,
// follow no other variable). Appending to it overrides; withoutVar takes
// WITHLOCK_DIR or WITHLOCK_SCOPE_FILE out for a test of the variables below
// it or of the default.
func testEnv(t *testing.T) []string {
	t.Helper()
	s := stateOf(t)
	var env []string
	for _, kv := range os.Environ() {
		key, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(key, "WITHLOCK_") || strings.HasPrefix(key, "NEXUSCORE_") || key == "XDG_RUNTIME_DIR" || key == "GORACE" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, markVar+"="+s.mark, "XDG_RUNTIME_DIR="+s.runtimeDir,
		"WITHLOCK_DIR="+filepath.Join(s.runtimeDir, "withlock"),
		"WITHLOCK_SCOPE_FILE="+filepath.Join(s.runtimeDir, "withlock", "scope.lock"), "GORACE="+testenv.GORACE())
}

// withoutVar returns env without the variable key.
func withoutVar(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k != key {
			out = append(out, kv)
		}
	}
	return out
}

// withlockCommand returns an unstarted withlock command with testEnv; tests
// that need stdin, extra env or another working directory adjust it and pass
// it to runCommand or startCommand.
func withlockCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("withlock binary unavailable: %v", buildErr)
	}
	cmd := exec.Command(withlockBin, args...)
	cmd.Env = testEnv(t)
	return cmd
}

// runWithlock runs withlock with args to completion (at most defaultDeadline)
// and returns its output and exit status (128+N when killed by signal N).
func runWithlock(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCommand(t, withlockCommand(t, args...), defaultDeadline)
}

// runCommand runs cmd to completion; past deadline it kills cmd and fails the test.
func runCommand(t *testing.T, cmd *exec.Cmd, deadline time.Duration) (stdout, stderr string, code int) {
	t.Helper()
	startCommand(t, cmd)
	code = waitExit(t, cmd, deadline)
	stdout, stderr = outputOf(cmd)
	return stdout, stderr, code
}

var startedCmds sync.Map // *exec.Cmd -> *execProc

// startWithlock starts withlock with args in the background. Use waitExit for
// its status and outputOf for what it printed so far; a command still running
// when the test ends is SIGKILLed.
func startWithlock(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := withlockCommand(t, args...)
	startCommand(t, cmd)
	return cmd
}

// startCommand starts cmd in the background with the one runner, launch
// (scorecard_helpers_test.go), bound to t: a failed start fails the test,
// and a command still running when the test ends is KILLed. Unless the
// caller set them, stdout and stderr go to files in t's output directory.
func startCommand(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = testEnv(t)
	}
	p := launch(cmd, stateOf(t).outputDir)
	if p.startErr != nil {
		t.Fatalf("start %s: %v", cmd, p.startErr)
	}
	startedCmds.Store(cmd, p)
	t.Cleanup(func() {
		if !p.ended() {
			_ = cmd.Process.Kill()
		}
		<-p.done
		p.output() // closes and removes the output files
		startedCmds.Delete(cmd)
	})
}

func startedOf(t *testing.T, cmd *exec.Cmd) *execProc {
	t.Helper()
	p, ok := startedCmds.Load(cmd)
	if !ok {
		t.Fatalf("%s was not started by startCommand", cmd)
	}
	return p.(*execProc)
}

// waitExit waits up to deadline for cmd to end and returns its exit status
// (128+N when killed by signal N). Past deadline it kills cmd and fails the test.
func waitExit(t *testing.T, cmd *exec.Cmd, deadline time.Duration) int {
	t.Helper()
	o, err := startedOf(t, cmd).wait(deadline)
	if err != nil {
		t.Fatalf("%v\nstdout: %s\nstderr: %s", err, o.stdout, o.stderr)
	}
	return o.code
}

// exited reports whether cmd has ended, without waiting.
func exited(t *testing.T, cmd *exec.Cmd) bool {
	t.Helper()
	return startedOf(t, cmd).ended()
}

// outputOf returns what cmd has written so far to its captured stdout and
// stderr ("" for a stream the caller redirected itself).
func outputOf(cmd *exec.Cmd) (stdout, stderr string) {
	p, ok := startedCmds.Load(cmd)
	if !ok {
		return "", ""
	}
	return p.(*execProc).outputSoFar()
}

// exitStatus is the shell's view of a process's end: its exit code, or 128+N
// when signal N killed it.
func exitStatus(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return state.ExitCode()
}

// waitFor polls cond until it holds, failing the test after deadline.
func waitFor(t *testing.T, deadline time.Duration, cond func() bool, what string) {
	t.Helper()
	testwait.For(t, deadline, what, cond)
}

// pollUntil polls cond until it holds or deadline passes, and reports
// whether it held.
func pollUntil(deadline time.Duration, cond func() bool) bool { return testwait.Until(deadline, cond) }

// proc is a live process seen in /proc.
type proc struct {
	pid, ppid int
	state     byte // R, S, D, T, Z, …
	cmdline   string
}

func (p proc) String() string { return fmt.Sprintf("pid %d (%s)", p.pid, p.cmdline) }

// readProc reads /proc/<pid>; ok is false when the process is gone.
func readProc(pid int) (proc, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, false
	}
	// "pid (comm) state ppid …": comm may hold spaces and parentheses.
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return proc{}, false
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 2 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return proc{pid: pid, ppid: ppid, state: fields[0][0], cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))}, true
}

// liveProcs lists every process in /proc that is not a zombie.
func liveProcs() []proc {
	entries, _ := os.ReadDir("/proc")
	var procs []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok && p.state != 'Z' {
			procs = append(procs, p)
		}
	}
	return procs
}

// liveDescendants lists the live (non-zombie) descendants of pid.
func liveDescendants(pid int) []proc {
	children := map[int][]proc{}
	for _, p := range liveProcs() {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	return out
}

// markedProcesses lists live processes whose environment carries mark. A
// zombie's environment reads empty, so zombies are not listed.
func markedProcesses(mark string) []proc {
	want := []byte(markVar + "=" + mark + "\x00")
	var out []proc
	for _, p := range liveProcs() {
		if p.pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid))
		if err == nil && (bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...))) {
			out = append(out, p)
		}
	}
	return out
}

// checkNoLeftovers fails t if processes carrying mark are still alive
// leftoverDeadline after the test, then SIGKILLs them so they cannot disturb
// other tests.
func checkNoLeftovers(t *testing.T, mark string) {
	t.Helper()
	if pollUntil(leftoverDeadline, func() bool { return len(markedProcesses(mark)) == 0 }) {
		return
	}
	left := markedProcesses(mark)
	t.Errorf("%d process(es) started by this test still alive %v after it: %v", len(left), leftoverDeadline, left)
	for _, p := range left {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// TestHarnessSeesMarkedProcesses: the leftover check finds a marked process
// even after it was reparented away from us, and stops seeing it once it is gone.
func TestHarnessSeesMarkedProcesses(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// sh starts a sleep in the background, records its pid and exits: the
	// sleep is orphaned, as a daemonising child of withlock's would be.
	cmd := exec.Command("sh", "-c", `sleep 60 & echo $! > "$1"`, "sh", pidFile)
	cmd.Env = testEnv(t)
	if _, _, code := runCommand(t, cmd, defaultDeadline); code != 0 {
		t.Fatalf("sh exited %d", code)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	found := markedProcesses(markOf(t))
	if len(found) != 1 || found[0].pid != pid {
		t.Fatalf("markedProcesses = %v, want the orphaned sleep (pid %d)", found, pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool { return len(markedProcesses(markOf(t))) == 0 }, "the killed sleep to disappear")
}

func TestHarnessDescendantsAndExitStatus(t *testing.T) {
	// sh waits on its sleep, so the sleep is a grandchild of this process.
	cmd := exec.Command("sh", "-c", "sleep 60; exit 3")
	startCommand(t, cmd)
	waitFor(t, 5*time.Second, func() bool {
		for _, p := range liveDescendants(os.Getpid()) {
			if p.ppid == cmd.Process.Pid && strings.HasPrefix(p.cmdline, "sleep 60") {
				return true
			}
		}
		return false
	}, "sh's sleep to appear among our descendants")
	if exited(t, cmd) {
		t.Fatal("sh ended early")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, defaultDeadline); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status after SIGTERM = %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	// the orphaned sleep carries the mark; kill it so the leftover check passes.
	for _, p := range markedProcesses(markOf(t)) {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	_, _, code := runCommand(t, exec.Command("sh", "-c", "exit 3"), defaultDeadline)
	if code != 3 {
		t.Errorf("exit status = %d, want 3", code)
	}
}

func TestHarnessEnvIsolation(t *testing.T) {
	t.Setenv("WITHLOCK_DIR", "/should/not/leak")
	t.Setenv("WITHLOCK_SCOPE_FILE", "/should/not/leak/scope.lock")
	stdout, _, code := runCommand(t, exec.Command("sh", "-c", `echo "dir=${WITHLOCK_DIR-unset} scope=${WITHLOCK_SCOPE_FILE-unset} xdg=$XDG_RUNTIME_DIR mark=$`+markVar+`"`), defaultDeadline)
	dir := filepath.Join(stateOf(t).runtimeDir, "withlock")
	want := fmt.Sprintf("dir=%s scope=%s xdg=%s mark=%s\n", dir, filepath.Join(dir, "scope.lock"), stateOf(t).runtimeDir, markOf(t))
	if code != 0 || stdout != want {
		t.Errorf("child saw %q (exit %d), want %q", stdout, code, want)
	}
}

func TestScaled(t *testing.T) {
	t.Setenv("WITHLOCK_STRESS", "")
	if got := scaled(3, 300); got != 3 {
		t.Errorf("scaled(3, 300) = %d without WITHLOCK_STRESS, want 3", got)
	}
	t.Setenv("WITHLOCK_STRESS", "1")
	if got := scaled(3, 300); got != 300 {
		t.Errorf("scaled(3, 300) = %d with WITHLOCK_STRESS=1, want 300", got)
	}
}
