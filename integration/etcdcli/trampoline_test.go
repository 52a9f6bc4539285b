//go:build etcd

package etcdcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// installAlone copies the default withlock into a fresh dir, with
// withlock-etcd beside it when etcdScript is not empty (a shell script).
func installAlone(t *testing.T, etcdScript string) string {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("withlock binaries unavailable: %v", buildErr)
	}
	dir := t.TempDir()
	data, err := os.ReadFile(withlock)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "withlock")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if etcdScript != "" {
		if err := os.WriteFile(filepath.Join(dir, "withlock-etcd"), []byte(etcdScript), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// TestTrampolineExecsSameCommand: `withlock run --backend etcd` becomes
// withlock-etcd with the same arguments, pid and environment (plus the
// marker). HUP and INT inherited as ignored (nohup) are still ignored
// although withlock had subscribed to them (exec resets caught signals to
// default); Go keeps no inherited ignore of other signals, in a direct run
// either, so USR1 and PIPE arrive as default, as withlock itself saw them.
func TestTrampolineExecsSameCommand(t *testing.T) {
	bin := installAlone(t, "#!/bin/sh\n"+
		`echo "pid $$"; echo "args $*"; echo "marker $WITHLOCK_ETCD_EXEC"; echo "keep $KEEP_ME"; grep SigIgn /proc/self/status`+"\n")
	args := []string{"run", "--backend", "etcd", "--endpoints", "http://etcd-a:2379", "job", "--", "echo", "hi"}
	// The shell ignores HUP, INT, USR1 and PIPE and execs withlock.
	cmd := exec.Command("sh", append([]string{"-c", `trap "" HUP INT USR1 PIPE; exec "$0" "$@"`, bin}, args...)...)
	cmd.Env = append(cleanEnv(), "KEEP_ME=yes")
	r := run(t, cmd)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	want := strings.Join([]string{
		fmt.Sprintf("pid %d", cmd.Process.Pid),
		"args " + strings.Join(args, " "),
		"marker " + filepath.Join(filepath.Dir(bin), "withlock-etcd"),
		"keep yes",
	}, "\n") + "\n"
	got, sigIgn, _ := strings.Cut(r.stdout, "SigIgn:\t")
	if got != want {
		t.Errorf("withlock-etcd saw\n%s\nwant\n%s", got, want)
	}
	// Only these four bits are the test's: the environment (a -race
	// runtime, a CI agent) may ignore others, such as signal 32.
	mask, err := strconv.ParseUint(strings.TrimSpace(sigIgn), 16, 64)
	if err != nil {
		t.Fatalf("SigIgn line: %q: %v", sigIgn, err)
	}
	bit := func(sig syscall.Signal) bool { return mask&(1<<(uint(sig)-1)) != 0 }
	if !bit(syscall.SIGHUP) || !bit(syscall.SIGINT) || bit(syscall.SIGUSR1) || bit(syscall.SIGPIPE) {
		t.Errorf("withlock-etcd's ignored signals %#x: want HUP and INT ignored (inherited), USR1 and PIPE not", mask)
	}
}

// TestTrampolineWithoutEtcdBinary: no withlock-etcd beside withlock or in
// PATH is exit 73 saying what to install; the command never runs.
func TestTrampolineWithoutEtcdBinary(t *testing.T) {
	bin := installAlone(t, "")
	ran := filepath.Join(t.TempDir(), "ran")
	cmd := exec.Command(bin, "run", "--backend", "etcd", "--endpoints", "http://127.0.0.1:1", "job", "--", "touch", ran)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	r := run(t, cmd)
	if r.code != 73 || !strings.Contains(r.stderr, "withlock-etcd") || !strings.Contains(r.stderr, "not installed") {
		t.Errorf("exit %d, stderr %q; want 73 saying withlock-etcd is not installed", r.code, r.stderr)
	}
	if exists(ran) {
		t.Error("the command ran")
	}
	// WITHLOCK_BACKEND=etcd asks the same.
	cmd = exec.Command(bin, "run", "--endpoints", "http://127.0.0.1:1", "job", "--", "touch", ran)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "WITHLOCK_BACKEND=etcd"}
	if r := run(t, cmd); r.code != 73 || !strings.Contains(r.stderr, "withlock-etcd") {
		t.Errorf("WITHLOCK_BACKEND=etcd: exit %d, stderr %q; want 73 naming withlock-etcd", r.code, r.stderr)
	}
}

// TestTrampolineRefusesToLoop: a withlock-etcd that is really the default
// build would exec itself forever; the marker stops it with 73.
func TestTrampolineRefusesToLoop(t *testing.T) {
	bin := installAlone(t, "")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(bin), "withlock-etcd"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	// An empty marker in the caller's environment must not hide ours.
	for _, env := range [][]string{cleanEnv(), append(cleanEnv(), "WITHLOCK_ETCD_EXEC=")} {
		cmd := exec.Command(bin, "run", "--backend", "etcd", "--endpoints", "http://127.0.0.1:1", "job", "--", "true")
		cmd.Env = env
		if r := run(t, cmd); r.code != 73 || !strings.Contains(r.stderr, "built without the etcd backend") {
			t.Errorf("env %q: exit %d, stderr %q; want 73 saying withlock-etcd lacks the etcd backend", env, r.code, r.stderr)
		}
	}
}
