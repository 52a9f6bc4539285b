//go:build etcd

package etcdcli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestTLSFlags: --etcd-cacert/--etcd-cert/--etcd-key reach a cluster that
// requires client certificates; without the client pair the run exits 73
// naming the TLS refusal.
func TestTLSFlags(t *testing.T) {
	certs := etcdtest.NewCerts(t)
	s := etcdtest.Start(t, etcdtest.Options{TLS: certs})
	r := run(t, wl(t, s, "--etcd-cacert", certs.CA, "--etcd-cert", certs.ClientCert, "--etcd-key", certs.ClientKey,
		"job", "--", "sh", "-c", `echo "$WITHLOCK_FENCING_TOKEN"`))
	if r.code != 0 || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("with client certificates: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	cmd := wl(t, s, "--etcd-dial-timeout", "1s", "job", "--", "true")
	cmd.Env = append(cmd.Env, "WITHLOCK_ETCD_CACERT="+certs.CA)
	r = run(t, cmd)
	if r.code != 73 || !strings.Contains(r.stderr, "certificate required") {
		t.Errorf("without a client certificate: exit %d, stderr %q; want 73 naming the TLS refusal", r.code, r.stderr)
	}
}

// TestCredentialsFromEnvironment: user and password come from
// WITHLOCK_ETCD_USERNAME/PASSWORD; a wrong password exits 73 at once.
func TestCredentialsFromEnvironment(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	etcdtest.EnableAuth(t, s, "root", "s3cret")
	cmd := wl(t, s, "job", "--", "true")
	cmd.Env = append(cmd.Env, "WITHLOCK_ETCD_USERNAME=root", "WITHLOCK_ETCD_PASSWORD=s3cret")
	if r := run(t, cmd); r.code != 0 {
		t.Fatalf("right password: exit %d, stderr %q", r.code, r.stderr)
	}
	cmd = wl(t, s, "--wait", "30s", "job", "--", "true")
	cmd.Env = append(cmd.Env, "WITHLOCK_ETCD_USERNAME=root", "WITHLOCK_ETCD_PASSWORD=wrong")
	r := run(t, cmd)
	if r.code != 73 || !strings.Contains(r.stderr, "authentication failed") || r.took > 10*time.Second {
		t.Errorf("wrong password: exit %d after %s, stderr %q; want 73 at once saying authentication failed", r.code, r.took, r.stderr)
	}
}

// TestEtcdctlHolderConflicts: while `etcdctl lock /withlock/run/job` holds
// the lock, withlock exits 75 saying another etcd client holds it.
func TestEtcdctlHolderConflicts(t *testing.T) {
	bin, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Skip("etcdctl not installed (Debian: apt-get install etcd-client); CI installs it, so this only skips locally")
	}
	s := etcdtest.Start(t, etcdtest.Options{})
	ctl := exec.Command(bin, "--endpoints="+s.Endpoint, "lock", "/withlock/run/job")
	ctl.Env = []string{"ETCDCTL_API=3"}
	held := start(t, ctl)
	waitFor(t, 10*time.Second, "etcdctl to hold the lock", func() bool { out, _ := held.output(); return out != "" })

	ran := filepath.Join(t.TempDir(), "ran")
	r := run(t, wl(t, s, "job", "--", "touch", ran))
	if r.code != 75 || !strings.Contains(r.stderr, "another etcd client") {
		t.Errorf("exit %d, stderr %q; want 75 naming another etcd client", r.code, r.stderr)
	}
	ctl.Process.Signal(syscall.SIGTERM)
	held.wait(t, 10*time.Second)
	if r := run(t, wl(t, s, "job", "--", "true")); r.code != 0 {
		t.Errorf("after etcdctl let go: exit %d, stderr %q", r.code, r.stderr)
	}
}
