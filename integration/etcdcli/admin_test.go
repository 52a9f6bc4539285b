//go:build etcd

package etcdcli

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// admin is `withlock SUBCOMMAND --backend etcd --endpoints URL ARGS...`
// (status, break) with the default binary, which execs withlock-etcd.
func admin(t *testing.T, s *etcdtest.Server, sub string, args ...string) *exec.Cmd {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("withlock binaries unavailable: %v", buildErr)
	}
	cmd := exec.Command(withlock, append([]string{sub, "--backend", "etcd", "--endpoints", s.Endpoint}, args...)...)
	cmd.Env = cleanEnv()
	return cmd
}

// keysOf returns the sorted keys of a JSON object and of each object in
// its "locks" array.
func keysOf(t *testing.T, doc string) (top []string, locks [][]string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, doc)
	}
	for k := range m {
		top = append(top, k)
	}
	slices.Sort(top)
	var ls []map[string]json.RawMessage
	if err := json.Unmarshal(m["locks"], &ls); err != nil {
		t.Fatalf(`"locks" is not an array of objects: %v\n%s`, err, doc)
	}
	for _, l := range ls {
		var keys []string
		for k := range l {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		locks = append(locks, keys)
	}
	return top, locks
}

// statusLock is the part of a `status --json` lock these tests read.
type statusLock struct {
	RunID        string `json:"run_id"`
	State        string `json:"state"`
	Pid          int    `json:"pid"`
	Command      string `json:"command"`
	LockID       string `json:"lock_id"`
	FencingToken uint64 `json:"fencing_token"`
}

func statusLocks(t *testing.T, doc string) []statusLock {
	t.Helper()
	var st struct{ Locks []statusLock }
	if err := json.Unmarshal([]byte(doc), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, doc)
	}
	return st.Locks
}

// TestStatusJSONHasTheFileShape: `status --backend etcd --json` and the
// file backend's `status --json`, each with one held lock, have the same
// keys at the top and in every lock, so one jq filter reads both.
func TestStatusJSONHasTheFileShape(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "etcd-child")
	etcdHolder := start(t, wl(t, s, "job", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	readPid(t, pidFile)
	lockDir := filepath.Join(dir, "locks")
	fileCmd := exec.Command(withlock, "run", "--dir", lockDir, "job", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, filepath.Join(dir, "file-child"))
	fileCmd.Env = cleanEnv()
	start(t, fileCmd)
	readPid(t, filepath.Join(dir, "file-child"))

	etcdOut := run(t, admin(t, s, "status", "--json"))
	fileStatus := exec.Command(withlock, "status", "--json", "--dir", lockDir)
	fileStatus.Env = cleanEnv()
	fileOut := run(t, fileStatus)
	if etcdOut.code != 0 || fileOut.code != 0 {
		t.Fatalf("status --json: etcd exit %d (%s), file exit %d (%s)", etcdOut.code, etcdOut.stderr, fileOut.code, fileOut.stderr)
	}
	eTop, eLocks := keysOf(t, etcdOut.stdout)
	fTop, fLocks := keysOf(t, fileOut.stdout)
	if !slices.Equal(eTop, fTop) || len(eLocks) != 1 || len(fLocks) != 1 || !slices.Equal(eLocks[0], fLocks[0]) {
		t.Errorf("etcd keys %v / %v\nfile keys %v / %v", eTop, eLocks, fTop, fLocks)
	}
	l := statusLocks(t, etcdOut.stdout)
	if l[0].RunID != "job" || l[0].State != "held" || l[0].Pid != etcdHolder.cmd.Process.Pid || !strings.Contains(l[0].Command, "sleep 600") {
		t.Errorf("etcd lock %+v; want job held by pid %d", l[0], etcdHolder.cmd.Process.Pid)
	}
}

// TestBreakRevokesTheHolder: `withlock break --backend etcd RUN_ID` revokes
// the holder's lease; the holder kills its child and exits 76, the waiter
// queued behind it runs, and status shows the lock gone.
func TestBreakRevokesTheHolder(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	pidFile, ran := filepath.Join(dir, "child"), filepath.Join(dir, "ran")
	holder := start(t, wl(t, s, "--grace", "1s", "job", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	child := readPid(t, pidFile)
	cl := s.Client(t)
	waiter := start(t, wl(t, s, "--wait", "60s", "job", "--", "touch", ran))
	waitFor(t, 20*time.Second, "the waiter to queue", func() bool { return len(contenders(t, cl, "job")) == 2 })

	st := run(t, admin(t, s, "status", "--json", "job"))
	locks := statusLocks(t, st.stdout)
	if st.code != 0 || len(locks) != 1 || locks[0].Pid != holder.cmd.Process.Pid {
		t.Fatalf("status --json job: exit %d, %q", st.code, st.stdout)
	}
	lease := fmt.Sprintf("%x", int64(ownerLease(t, cl, "job")))
	if locks[0].LockID != lease {
		t.Errorf("lock_id %q, want the holder's lease %s", locks[0].LockID, lease)
	}

	br := run(t, admin(t, s, "break", "job"))
	if br.code != 0 || !strings.Contains(br.stdout, `broke the lock of run "job" (lease `+lease+` revoked; was pid `+strconv.Itoa(holder.cmd.Process.Pid)) {
		t.Fatalf("break: exit %d, stdout %q, stderr %q", br.code, br.stdout, br.stderr)
	}
	if r := holder.wait(t, 10*time.Second); r.code != 76 || !strings.Contains(r.stderr, "lost") {
		t.Errorf("holder: exit %d, stderr %q; want 76 saying the lock was lost", r.code, r.stderr)
	}
	waitFor(t, 5*time.Second, "the holder's child to be gone", func() bool { return gone(child) })
	if r := waiter.wait(t, 20*time.Second); r.code != 0 || !exists(ran) {
		t.Errorf("waiter: exit %d, stderr %q, ran %v; want 0 and its command run", r.code, r.stderr, exists(ran))
	}
	st = run(t, admin(t, s, "status", "--json"))
	// job is listed for its history (SPEC §8) but held by nobody.
	if locks := statusLocks(t, st.stdout); st.code != 0 || len(locks) != 1 || locks[0].State != "free" {
		t.Errorf("status --json after the break: exit %d, %q; want job free", st.code, st.stdout)
	}
	if br := run(t, admin(t, s, "break", "job")); br.code != 0 || br.stdout != "no lock for run \"job\"\n" {
		t.Errorf("break of a free run id: exit %d, stdout %q, stderr %q", br.code, br.stdout, br.stderr)
	}
	if tbl := run(t, admin(t, s, "status")); tbl.code != 0 || !regexp.MustCompile(`(?m)^job +free +- `).MatchString(tbl.stdout) {
		t.Errorf("status table with no locks: exit %d, %q", tbl.code, tbl.stdout)
	}
}

// TestBreakEtcdctlHolder: a lock taken with `etcdctl lock` shows in status
// (held, no pid) and break revokes it: etcdctl's key is gone and withlock
// can take the lock.
func TestBreakEtcdctlHolder(t *testing.T) {
	bin, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Skip("etcdctl not installed (Debian: apt-get install etcd-client); CI installs it, so this only skips locally")
	}
	s := etcdtest.Start(t, etcdtest.Options{})
	ctl := exec.Command(bin, "--endpoints="+s.Endpoint, "lock", "/withlock/run/job", "sleep", "600")
	ctl.Env = []string{"ETCDCTL_API=3", "PATH=/usr/bin:/bin"}
	start(t, ctl)
	cl := s.Client(t)
	waitFor(t, 10*time.Second, "etcdctl to hold the lock", func() bool { return len(contenders(t, cl, "job")) == 1 })

	st := run(t, admin(t, s, "status", "--json"))
	locks := statusLocks(t, st.stdout)
	if st.code != 0 || len(locks) != 1 || locks[0].RunID != "job" || locks[0].State != "held" || locks[0].Pid != 0 || locks[0].FencingToken == 0 {
		t.Fatalf("status --json with etcdctl holding: exit %d, %q", st.code, st.stdout)
	}
	if br := run(t, admin(t, s, "break", "job")); br.code != 0 || !strings.Contains(br.stdout, "another etcd client") {
		t.Fatalf("break: exit %d, stdout %q, stderr %q", br.code, br.stdout, br.stderr)
	}
	get := exec.Command(bin, "--endpoints="+s.Endpoint, "get", "--prefix", "--keys-only", "/withlock/run/job/")
	get.Env = ctl.Env
	if out, err := get.Output(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("etcdctl get after the break: %q, %v; want no keys", out, err)
	}
	if r := run(t, wl(t, s, "job", "--", "true")); r.code != 0 {
		t.Errorf("run after the break: exit %d, stderr %q", r.code, r.stderr)
	}
}
