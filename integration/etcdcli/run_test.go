//go:build etcd

package etcdcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestRunPassesStatusAndEnv: the default withlock execs withlock-etcd, the
// child runs with the lock's environment, and its status is passed through.
func TestRunPassesStatusAndEnv(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	r := run(t, wl(t, s, "job", "--", "sh", "-c", `echo "$WITHLOCK_RUN_ID $WITHLOCK_LOCK_KEY $WITHLOCK_FENCING_TOKEN"; exit 3`))
	if r.code != 3 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q; want 3 and nothing", r.code, r.stderr)
	}
	f := strings.Fields(r.stdout)
	if len(f) != 3 || f[0] != "job" || !strings.HasPrefix(f[1], "/withlock/run/job/") {
		t.Fatalf("child saw %q; want run id, key and token", r.stdout)
	}
	if tok, err := strconv.ParseInt(f[2], 10, 64); err != nil || tok <= 0 {
		t.Errorf("fencing token %q", f[2])
	}
	if keys := contenders(t, s.Client(t), "job"); len(keys) != 0 {
		t.Errorf("keys left after the run: %q", keys)
	}
}

// TestConflictExits75: a held lock ends a second run at once with 75 and
// one line naming the holder; -q --conflict-exit-code 0 makes it silent.
func TestConflictExits75(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "holder")
	holder := start(t, wl(t, s, "job", "--", "sh", "-c", `echo started > "$0"; exec sleep 600`, pidFile))
	readPid(t, pidFile)

	r := run(t, wl(t, s, "job", "--", "touch", filepath.Join(dir, "ran")))
	if r.code != 75 {
		t.Fatalf("second run: exit %d (stderr %q); want 75", r.code, r.stderr)
	}
	want := fmt.Sprintf("pid %d", holder.cmd.Process.Pid) // exec keeps the pid
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 ||
		!strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "sh -c") {
		t.Errorf("conflict stderr %q; want one line naming %s and its command", r.stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran despite the conflict")
	}
	r = run(t, wl(t, s, "-q", "--conflict-exit-code", "0", "job", "--", "true"))
	if r.code != 0 || r.stderr != "" {
		t.Errorf("-q --conflict-exit-code 0: exit %d, stderr %q; want 0 and silence", r.code, r.stderr)
	}
}

// TestWaitHandOff: --wait queues behind the holder and runs as soon as it
// is done, with a larger fencing token.
func TestWaitHandOff(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	cl := s.Client(t)
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	first := start(t, wl(t, s, "job", "--", "sh", "-c",
		`echo "$WITHLOCK_FENCING_TOKEN"; while [ ! -e "$0" ]; do sleep 0.02; done`, goFile))
	waitFor(t, 20*time.Second, "the first run to hold the lock", func() bool { return len(contenders(t, cl, "job")) == 1 })
	second := start(t, wl(t, s, "--wait", "30s", "job", "--", "sh", "-c", `echo "$WITHLOCK_FENCING_TOKEN"`))
	waitFor(t, 20*time.Second, "the second run to queue", func() bool { return len(contenders(t, cl, "job")) == 2 })
	if out, _ := second.output(); out != "" {
		t.Fatalf("second run's command ran while the first held the lock: %q", out)
	}
	os.WriteFile(goFile, nil, 0o600)
	r1, r2 := first.wait(t, 20*time.Second), second.wait(t, 20*time.Second)
	if r1.code != 0 || r2.code != 0 {
		t.Fatalf("exits %d, %d (stderr %q, %q); want 0, 0", r1.code, r2.code, r1.stderr, r2.stderr)
	}
	t1, _ := strconv.ParseInt(strings.TrimSpace(r1.stdout), 10, 64)
	t2, _ := strconv.ParseInt(strings.TrimSpace(r2.stdout), 10, 64)
	if t1 <= 0 || t2 <= t1 {
		t.Errorf("tokens %q then %q; want increasing", r1.stdout, r2.stdout)
	}
}

// TestSignalAbortsWait: TERM while waiting ends withlock with 143 without
// running the command, and leaves nothing queued.
func TestSignalAbortsWait(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	cl := s.Client(t)
	dir := t.TempDir()
	start(t, wl(t, s, "job", "--", "sleep", "600"))
	waitFor(t, 20*time.Second, "the holder", func() bool { return len(contenders(t, cl, "job")) == 1 })
	waiter := start(t, wl(t, s, "--wait", "forever", "job", "--", "touch", filepath.Join(dir, "ran")))
	waitFor(t, 20*time.Second, "the waiter to queue", func() bool { return len(contenders(t, cl, "job")) == 2 })
	waiter.cmd.Process.Signal(syscall.SIGTERM)
	if r := waiter.wait(t, 10*time.Second); r.code != 128+int(syscall.SIGTERM) {
		t.Errorf("waiter exit %d (stderr %q); want 143", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran after the wait was aborted")
	}
	waitFor(t, 10*time.Second, "the waiter's key to go", func() bool { return len(contenders(t, cl, "job")) == 1 })
}

// TestRunIDOver4KiBIsUsageError: SPEC §3's bound holds for etcd as for
// files, though etcd itself would take the key: a run id of 4097 bytes is
// a usage error (64) in one line, plain, with --max and with --shared;
// nothing runs and no key (lock, slot, history) is written; status and
// break of it are usage errors too. Negative control: 4096 bytes run, and
// are looked up.
func TestRunIDOver4KiBIsUsageError(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	ran := filepath.Join(t.TempDir(), "ran")
	long := strings.Repeat("<", 4097)
	for _, mode := range [][]string{nil, {"--max", "2"}, {"--shared"}} {
		r := run(t, wl(t, s, append(mode, long, "--", "touch", ran)...))
		if r.code != 64 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "(4097 bytes): longer than 4096 bytes") {
			t.Errorf("%q: exit %d, stderr %q; want 64 and one line naming the bound", mode, r.code, r.stderr)
		}
		if exists(ran) {
			t.Errorf("%q: the command ran", mode)
		}
	}
	resp, err := s.Client(t).Get(etcdtest.Ctx(t), "/withlock/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d keys written under /withlock/ by refused runs", resp.Count)
	}
	// status and break of it too: the bound is the command line's.
	for _, args := range [][]string{{"status", long}, {"status", "--json", "ok", long}, {"break", long}} {
		if r := run(t, admin(t, s, args[0], args[1:]...)); r.code != 64 || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: exit %d, %d bytes on stdout, stderr %.300q; want 64 and one line", args[0], r.code, len(r.stdout), r.stderr)
		}
	}
	os.Remove(ran)
	if r := run(t, wl(t, s, long[1:], "--", "touch", ran)); r.code != 0 || !exists(ran) {
		t.Errorf("control, 4096 bytes: exit %d, ran %v, stderr %q", r.code, exists(ran), r.stderr)
	}
	for _, sub := range []string{"status", "break"} {
		if r := run(t, admin(t, s, sub, long[1:])); r.code != 0 {
			t.Errorf("control, %s of 4096 bytes: exit %d, stderr %q", sub, r.code, r.stderr)
		}
	}
}
