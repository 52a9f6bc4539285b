//go:build etcd

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// etcdAdminApp runs etcdStatus and etcdBreak as the status and break
// commands will: with their own flags (status has no logging flags) plus
// the etcd ones.
func etcdAdminApp(stdout, stderr *bytes.Buffer) *cli.App {
	statusFlags := append(etcdFlags(), &cli.BoolFlag{Name: "json"})
	breakFlags := append(etcdFlags(), logFlags()...)
	breakFlags = append(breakFlags, &cli.BoolFlag{Name: "force"}, &cli.BoolFlag{Name: "signal"})
	return &cli.App{
		Writer: stdout, ErrWriter: stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			{Name: "status", Flags: statusFlags, Action: etcdStatus},
			{Name: "break", Flags: breakFlags, Action: func(c *cli.Context) error { return etcdBreak(c, c.Args().First()) }},
		},
	}
}

func runAdmin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := etcdAdminApp(&out, &errOut).Run(append([]string{"withlock"}, args...))
	code, msg := 0, ""
	if err != nil {
		code, msg = statusOf(err)
	}
	return out.String(), errOut.String() + msg, code
}

// TestEtcdStatusAndBreak: status lists holders with their pid, command and
// fencing token (table and JSON); break refuses a live holder (75) unless
// --force, which revokes its lease; status then no longer lists it, and a
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

	out, errOut, code := runAdmin(t, "status", "--endpoints", s.Endpoint)
	t.Logf("status:\n%s", out)
	token := strconv.FormatInt(lock.FencingToken(), 10)
	if code != 0 || !strings.Contains(out, "nightly-backup") || !strings.Contains(out, "backup --full") || !strings.Contains(out, token) {
		t.Fatalf("status: exit %d, stdout %q, stderr %q; want the holder with token %s", code, out, errOut, token)
	}
	out, _, code = runAdmin(t, "status", "--endpoints", s.Endpoint, "nightly-backup", "weekly")
	if code != 0 || !strings.Contains(out, "nightly-backup") || !strings.Contains(out, "weekly") || !strings.Contains(out, "free") {
		t.Fatalf("status of two run ids: exit %d, stdout %q; want the holder and weekly free", code, out)
	}
	out, _, code = runAdmin(t, "status", "--json", "--endpoints", s.Endpoint)
	var entries []etcdStatusEntry
	if err := json.Unmarshal([]byte(out), &entries); code != 0 || err != nil || len(entries) != 1 ||
		entries[0].RunID != "nightly-backup" || !entries[0].Held || entries[0].FencingToken != lock.FencingToken() || entries[0].Foreign || entries[0].TTLSeconds <= 0 {
		t.Fatalf("status --json: exit %d, %q (%v)", code, out, err)
	}

	_, errOut, code = runAdmin(t, "break", "--endpoints", s.Endpoint, "nightly-backup")
	if code != exitTempFail || !strings.Contains(errOut, "backup --full") || !strings.Contains(errOut, "--force") {
		t.Fatalf("break without --force: exit %d, stderr %q; want 75 naming the holder and --force", code, errOut)
	}
	select {
	case err := <-lost:
		t.Fatalf("refused break took the lock: %v", err)
	default:
	}
	out, errOut, code = runAdmin(t, "break", "--force", "--endpoints", s.Endpoint, "nightly-backup")
	if code != 0 || !strings.Contains(out, "revoked the etcd lease of run \"nightly-backup\"") {
		t.Fatalf("break --force: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not learn of the break within 5s")
	}
	if out, _, _ := runAdmin(t, "status", "--endpoints", s.Endpoint); strings.Contains(out, "nightly-backup") {
		t.Errorf("status after break still lists it: %q", out)
	}
	if out, errOut, code := runAdmin(t, "break", "--force", "--endpoints", s.Endpoint, "nightly-backup"); code != 0 || !strings.Contains(out, "no lock") {
		t.Errorf("second break: exit %d, stdout %q, stderr %q; want 0 saying there is no lock", code, out, errOut)
	}
}

// TestEtcdFlagErrors: bad etcd settings are usage errors (64), unreadable
// TLS files are 73, before anything is run.
func TestEtcdFlagErrors(t *testing.T) {
	for _, env := range []string{"WITHLOCK_ETCD_ENDPOINTS", "WITHLOCK_ETCD_USERNAME", "WITHLOCK_ETCD_PASSWORD", "WITHLOCK_BACKEND"} {
		t.Setenv(env, "")
	}
	run := func(args ...string) int {
		return Main(append([]string{"withlock", "run", "--backend", "etcd"}, append(args, "job", "--", "false")...))
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
			if got := run(c.args...); got != c.want {
				t.Errorf("exit %d; want %d", got, c.want)
			}
		})
	}
}
