package supervisor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/withlock/withlock/internal/testwait"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// helper is one supervise-role process started by a test.
type helper struct {
	cmd    *exec.Cmd
	dir    string
	token  string // in every descendant's environment, to find leftovers
	result string
	ready  string
}

// helperOpts configure the supervise role; see superviseRole.
type helperOpts struct {
	argv        []string
	env         []string // extra HELPER_* settings
	stdio       *os.File // stdin, stdout and stderr of the helper; nil: /dev/null and the test's stderr
	sysProcAttr *syscall.SysProcAttr
	wrap        []string // run the helper through this command (e.g. sh -c 'trap ...; exec "$@"')
}

var tokenSeq int

func startHelper(t *testing.T, o helperOpts) *helper {
	t.Helper()
	dir := t.TempDir()
	tokenSeq++
	h := &helper{dir: dir, token: fmt.Sprintf("%d-%d-%d", os.Getpid(), tokenSeq, time.Now().UnixNano()),
		result: filepath.Join(dir, "result.json"), ready: filepath.Join(dir, "ready")}
	argv, _ := json.Marshal(o.argv)
	args := append(append([]string{}, o.wrap...), os.Args[0], "-test.run=^$")
	h.cmd = exec.Command(args[0], args[1:]...)
	h.cmd.Env = append(os.Environ(), roleEnv+"=supervise", "HELPER_ARGV="+string(argv),
		"HELPER_RESULT="+h.result, "HELPER_READY="+h.ready, "SUPERVISOR_TEST_TOKEN="+h.token)
	h.cmd.Env = append(h.cmd.Env, o.env...)
	h.cmd.Stderr = os.Stderr
	if o.stdio != nil {
		h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr = o.stdio, o.stdio, o.stdio
	}
	h.cmd.SysProcAttr = o.sysProcAttr
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
		killLeftovers(t, h.token)
	})
	return h
}

// waitReady waits until the helper has subscribed to signals.
func (h *helper) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, defaultWait, "helper ready", func() bool {
		_, err := os.Stat(h.ready)
		return err == nil
	})
}

// childPid waits for the helper's only child (a command that forks nothing)
// to have exec'd, and returns its pid. Between vfork and exec the child
// still runs the helper's binary with the helper's environment, token
// included: a test that stopped it there would stop the helper's spawn
// with it (the parent of a vfork waits for the exec), which is not what
// any test here means to do.
func (h *helper) childPid(t *testing.T) int {
	t.Helper()
	self, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var child int
	waitFor(t, defaultWait, "the supervised command", func() bool {
		for pid := range withToken(h.token) {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if pid != h.cmd.Process.Pid && err == nil && exe != self {
				child = pid
				return true
			}
		}
		return false
	})
	return child
}

func (h *helper) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal helper: %v", err)
	}
}

// wait waits for the helper to exit (at most 30 s) and returns its result.
func (h *helper) wait(t *testing.T) helperResult {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = h.cmd.Process.Kill()
		<-done
		t.Fatalf("helper did not exit within 30s")
	}
	r := h.readResult(t)
	if got := h.cmd.ProcessState.ExitCode(); got != r.Status {
		t.Errorf("helper exit code %d, result says %d", got, r.Status)
	}
	return r
}

// readResult reads the result the helper wrote before exiting.
func (h *helper) readResult(t *testing.T) helperResult {
	t.Helper()
	var r helperResult
	b, err := os.ReadFile(h.result)
	if err != nil {
		t.Fatalf("helper exited (%v) without a result: %v", h.cmd.ProcessState, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("result %q: %v", b, err)
	}
	return r
}

var waitFor = testwait.For

// withToken lists the pids whose environment holds SUPERVISOR_TEST_TOKEN=token,
// with their state letter (Z for zombie).
func withToken(token string) map[int]string {
	found := map[int]string{}
	needle := []byte("SUPERVISOR_TEST_TOKEN=" + token + "\x00")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		found[pid] = procState(pid)
	}
	return found
}

func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "?"
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "?"
	}
	return string(b[i+2])
}

// killLeftovers KILLs whatever a test left behind (only a failing test or
// a negative control leaves anything).
func killLeftovers(t *testing.T, token string) {
	for pid := range withToken(token) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// zombieChildren lists the test process's own children that are zombies.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	var zs []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		var state string
		var ppid int
		if _, err := fmt.Sscan(string(b[i+1:]), &state, &ppid); err == nil && ppid == os.Getpid() && state == "Z" {
			zs = append(zs, pid)
		}
	}
	return zs
}

// defaultWait bounds every wait for a condition.
const defaultWait = 20 * time.Second
