//go:build etcd

package etcdcli

import (
	"bytes"
	"errors"
	"github.com/withlock/withlock/internal/testwait"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// runDeadline bounds any one withlock run in these tests.
const runDeadline = 60 * time.Second

// wl is a withlock command line against server s: `withlock run --backend
// etcd --endpoints URL ARGS...`, with a clean environment.
func wl(t *testing.T, s *etcdtest.Server, args ...string) *exec.Cmd {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("withlock binaries unavailable: %v", buildErr)
	}
	full := append([]string{"run", "--backend", "etcd", "--endpoints", s.Endpoint}, args...)
	cmd := exec.Command(withlock, full...)
	cmd.Env = cleanEnv()
	return cmd
}

// cleanEnv is the environment of withlock under test: no WITHLOCK_* from
// the caller, and the race detector's reports made fatal.
func cleanEnv() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if raceBuild {
		env = append(env, "GORACE=halt_on_error=1 exitcode=66")
	}
	return env
}

// result is how a withlock run ended.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// run runs cmd to the end (bounded by runDeadline).
func run(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	code := wait(t, cmd, runDeadline)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
}

// background is a command started by start.
type background struct {
	cmd *exec.Cmd
	dir string // stdout and stderr files
}

// start starts cmd in the background, its output going to files; it is
// killed at the end of the test if still running.
func start(t *testing.T, cmd *exec.Cmd) *background {
	t.Helper()
	b := &background{cmd: cmd, dir: t.TempDir()}
	out, err := os.Create(filepath.Join(b.dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	errf, err := os.Create(filepath.Join(b.dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = out, errf
	// A group of its own, KILLed whole at the end: what the command
	// started (etcdctl lock's `sleep 600`) must not outlive the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if cmd.ProcessState == nil {
			cmd.Wait()
		}
	})
	return b
}

// output is what the command printed so far.
func (b *background) output() (stdout, stderr string) {
	o, _ := os.ReadFile(filepath.Join(b.dir, "stdout"))
	e, _ := os.ReadFile(filepath.Join(b.dir, "stderr"))
	return string(o), string(e)
}

// wait waits for the command to exit within d: its status and output.
func (b *background) wait(t *testing.T, d time.Duration) result {
	t.Helper()
	code := wait(t, b.cmd, d)
	stdout, stderr := b.output()
	return result{code: code, stdout: stdout, stderr: stderr}
}

// wait waits for cmd to exit within d and returns its status (128+N for a
// signal); past d it kills it and fails the test.
func wait(t *testing.T, cmd *exec.Cmd, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return status(cmd.ProcessState)
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not exit within %s", strings.Join(cmd.Args, " "), d)
		return -1
	}
}

func status(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

var waitFor = testwait.For

// contenders are the keys queued on runID's mutex (default prefix).
func contenders(t *testing.T, cl *clientv3.Client, runID string) []string {
	t.Helper()
	resp, err := cl.Get(etcdtest.Ctx(t), "/withlock/run/"+runID+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys
}

// ownerLease is the lease of runID's owner key.
func ownerLease(t *testing.T, cl *clientv3.Client, runID string) clientv3.LeaseID {
	t.Helper()
	resp, err := cl.Get(etcdtest.Ctx(t), "/withlock/run/"+runID+"/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		t.Fatalf("no owner key for %s: %v", runID, err)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

// readPid waits for a child to write its pid into path.
func readPid(t *testing.T, path string) string {
	t.Helper()
	var pid string
	waitFor(t, 20*time.Second, "the child to start", func() bool {
		data, err := os.ReadFile(path)
		pid = strings.TrimSpace(string(data))
		return err == nil && strings.HasSuffix(string(data), "\n")
	})
	return pid
}

// gone reports whether pid no longer runs (absent or a zombie).
func gone(pid string) bool {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
