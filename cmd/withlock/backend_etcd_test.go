//go:build etcd

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// etcdAdminApp runs etcdStatus and etcdBreak as the status and break
// commands will: with their own flags (status has no logging flags) plus
// the etcd ones.
func etcdAdminApp(stdout, stderr *bytes.Buffer) *cli.Command {
	statusFlags := append(etcdFlags(), &cli.BoolFlag{Name: "json"})
	breakFlags := append(etcdFlags(), logFlags()...)
	breakFlags = append(breakFlags, &cli.BoolFlag{Name: "force"}, &cli.BoolFlag{Name: "signal"})
	return &cli.Command{
		Name:   "withlock",
		Writer: stdout, ErrWriter: stderr,
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		Commands: []*cli.Command{
			{Name: "status", Flags: statusFlags, Action: func(_ context.Context, c *cli.Command) error { return etcdStatus(c) }},
			{Name: "break", Flags: breakFlags, Action: func(_ context.Context, c *cli.Command) error { return etcdBreak(c, c.Args().First()) }},
		},
	}
}

func runAdmin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := etcdAdminApp(&out, &errOut).Run(context.Background(), append([]string{"withlock"}, args...))
	code, msg := 0, ""
	if err != nil {
		code, msg = statusOf(err)
	}
	return out.String(), errOut.String() + msg, code
}

// jsonKeys is the set of keys of a JSON object.
func jsonKeys(t *testing.T, data []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestEtcdStatusAndBreak: status lists holders as the file backend does —
// the same table, the same JSON document (every key of statusReport and of
// lockStatus, nothing else) with pid, command, lease and fencing token —
// and counts the queued waiters; break revokes the holder's lease (0), the
// holder learns it has lost the lock, status no longer lists it, and a
// second break finds nothing (0).
func TestEtcdStatusAndBreak(t *testing.T) {
	t.Setenv("WITHLOCK_ETCD_ENDPOINTS", "")
	s := etcdtest.Start(t, etcdtest.Options{})
	l := &etcdlock.Locker{Endpoints: []string{s.Endpoint}, Command: "backup --full"}
	lock, err := l.Acquire(context.Background(), "nightly-backup", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	lost, stop := lock.Heartbeat()
	defer stop()

	// A second contender queues behind the holder until the test ends.
	waitCtx, cancelWait := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		w := &etcdlock.Locker{Endpoints: []string{s.Endpoint}, Command: "second"}
		got, err := w.Acquire(waitCtx, "nightly-backup", time.Minute)
		if err == nil {
			got.Release()
		}
		waited <- err
	}()
	defer func() { cancelWait(); <-waited }()
	deadline := time.Now().Add(10 * time.Second)
	var out, errOut string
	var code int
	for {
		out, errOut, code = runAdmin(t, "status", "--endpoints", s.Endpoint)
		if strings.Contains(out, "waiting: nightly-backup 1") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("status:\n%s", out)
	token := strconv.FormatInt(lock.FencingToken(), 10)
	for _, want := range []string{"RUN ID", "STATE", "nightly-backup", "held", "alive", "backup --full", token, "waiting: nightly-backup 1"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("status: exit %d, stdout %q, stderr %q; want %q in it", code, out, errOut, want)
		}
	}
	out, _, code = runAdmin(t, "status", "--endpoints", s.Endpoint, "nightly-backup", "weekly")
	if code != 0 || !strings.Contains(out, "nightly-backup") || !strings.Contains(out, "weekly") || !strings.Contains(out, "free") {
		t.Fatalf("status of two run ids: exit %d, stdout %q; want the holder and weekly free", code, out)
	}

	out, _, code = runAdmin(t, "status", "--json", "--endpoints", s.Endpoint)
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || len(st.Locks) != 1 {
		t.Fatalf("status --json: exit %d, %q (%v)", code, out, err)
	}
	fileShape, _ := json.Marshal(statusReport{})
	if got, want := jsonKeys(t, []byte(out)), jsonKeys(t, fileShape); !slices.Equal(got, want) {
		t.Errorf("status --json keys %v, want the file backend's %v", got, want)
	}
	var doc struct{ Locks []json.RawMessage }
	_ = json.Unmarshal([]byte(out), &doc)
	lockShape, _ := json.Marshal(lockStatus{})
	if got, want := jsonKeys(t, doc.Locks[0]), jsonKeys(t, lockShape); !slices.Equal(got, want) {
		t.Errorf("status --json lock keys %v, want the file backend's %v", got, want)
	}
	got := st.Locks[0]
	if got.RunID != "nightly-backup" || got.State != "held" || got.Liveness != "alive" || got.Command != "backup --full" ||
		got.Pid != os.Getpid() || got.FencingToken != uint64(lock.FencingToken()) || got.LockID != fmt.Sprintf("%x", int64(lock.Lease)) ||
		!strings.HasPrefix(got.Key, "/withlock/run/nightly-backup/") || got.ExpiresInSeconds <= 0 || got.CreatedAt <= 0 ||
		st.Dir != s.Endpoint+"/withlock/run/" || st.Scopes != nil {
		t.Errorf("status --json: %+v (dir %q)", got, st.Dir)
	}

	out, errOut, code = runAdmin(t, "break", "--endpoints", s.Endpoint, "nightly-backup")
	if code != 0 || !strings.Contains(out, `broke the lock of run "nightly-backup"`) || !strings.Contains(out, "backup --full") {
		t.Fatalf("break: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not learn of the break within 5s")
	}
	if out, _, _ := runAdmin(t, "status", "--endpoints", s.Endpoint); strings.Contains(out, "backup --full") {
		t.Errorf("status after break still lists the broken holder: %q", out)
	}
	cancelWait() // the waiter may hold it now; let it go
	if err := <-waited; err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("waiter: %v", err)
	}
	waited <- nil
	if out, errOut, code := runAdmin(t, "break", "--endpoints", s.Endpoint, "nightly-backup"); code != 0 || out != "no lock for run \"nightly-backup\"\n" {
		t.Errorf("second break: exit %d, stdout %q, stderr %q; want 0 and the file backend's line", code, out, errOut)
	}
	out, _, code = runAdmin(t, "status", "--json", "--endpoints", s.Endpoint)
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || len(st.Locks) != 0 || st.Locks == nil {
		t.Errorf("status --json with no locks: exit %d, %q (%v); want \"locks\": []", code, out, err)
	}
}

// TestEtcdBreakForeignHolderAndUnreachable: a key of another client of the
// recipe (as etcdctl lock writes: no holder information) is listed held,
// with its lease as lock_id and no pid, and break revokes it; an
// unreachable cluster is 73 for status and break.
func TestEtcdBreakForeignHolderAndUnreachable(t *testing.T) {
	t.Setenv("WITHLOCK_ETCD_ENDPOINTS", "")
	s := etcdtest.Start(t, etcdtest.Options{})
	cl, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	lease, err := cl.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("/withlock/run/other/%x", int64(lease.ID))
	if _, err := cl.Put(ctx, key, "", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	out, _, code := runAdmin(t, "status", "--json", "--endpoints", s.Endpoint, "other")
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || len(st.Locks) != 1 {
		t.Fatalf("status --json: exit %d, %q (%v)", code, out, err)
	}
	if l := st.Locks[0]; l.State != "held" || l.Key != key || l.LockID != fmt.Sprintf("%x", int64(lease.ID)) || l.Pid != 0 || l.Command != "" {
		t.Errorf("foreign holder: %+v", l)
	}
	out, errOut, code := runAdmin(t, "break", "--endpoints", s.Endpoint, "other")
	if code != 0 || !strings.Contains(out, "another etcd client") {
		t.Fatalf("break: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if resp, err := cl.Get(ctx, key); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("after break the key is still there: %v, %v", resp, err)
	}
	if ttl, err := cl.TimeToLive(ctx, lease.ID); err != nil || ttl.TTL != -1 {
		t.Errorf("after break the lease lives on: %+v, %v", ttl, err)
	}

	down := []string{"--endpoints", "http://127.0.0.1:1", "--etcd-dial-timeout", "300ms"}
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"break", "x"}} {
		args = append(args[:1], append(append([]string{}, down...), args[1:]...)...)
		if out, errOut, code := runAdmin(t, args...); code != exitCantCreate || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Errorf("%v with etcd down: exit %d, stdout %q, stderr %q; want 73 naming the endpoint", args, code, out, errOut)
		}
	}
}

// TestEtcdFlagErrors: bad etcd settings are usage errors (64), unreadable
// TLS files are 73, before anything is run.
func TestEtcdFlagErrors(t *testing.T) {
	for _, env := range []string{"WITHLOCK_ETCD_ENDPOINTS", "WITHLOCK_ETCD_USERNAME", "WITHLOCK_ETCD_PASSWORD", "WITHLOCK_BACKEND"} {
		t.Setenv(env, "")
	}
	runEtcd := func(args ...string) int {
		return report(run(append([]string{"withlock", "run", "--backend", "etcd"}, append(args, "job", "--", "false")...)))
	}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want int
	}{
		{"no endpoints", nil, nil, exitUsage},
		{"cert without key", []string{"--endpoints", "http://127.0.0.1:1", "--etcd-cert", "c.pem"}, nil, exitUsage},
		{"missing CA file", []string{"--endpoints", "http://127.0.0.1:1", "--etcd-cacert", "/nonexistent/ca.pem"}, nil, exitCantCreate},
		{"user without password", []string{"--endpoints", "http://127.0.0.1:1"}, map[string]string{"WITHLOCK_ETCD_USERNAME": "root"}, exitUsage},
		{"empty prefix", []string{"--endpoints", "http://127.0.0.1:1", "--etcd-prefix", ""}, nil, exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if got := runEtcd(c.args...); got != c.want {
				t.Errorf("exit %d; want %d", got, c.want)
			}
		})
	}
}
