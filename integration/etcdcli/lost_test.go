//go:build etcd

package etcdcli

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestRevokedLeaseKills76: when the lease is revoked under a running child
// (an operator, `withlock break`), withlock sees it at once — not at the
// next keepalive, 10 s away with a 30 s TTL — kills the child and exits 76.
func TestRevokedLeaseKills76(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	cl := s.Client(t)
	pidFile := filepath.Join(t.TempDir(), "child")
	holder := start(t, wl(t, s, "--ttl", "30s", "--grace", "1s", "job", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	child := readPid(t, pidFile)

	revoked := time.Now()
	if _, err := cl.Revoke(etcdtest.Ctx(t), ownerLease(t, cl, "job")); err != nil {
		t.Fatal(err)
	}
	r := holder.wait(t, 8*time.Second)
	t.Logf("exit %d after %s; stderr %q", r.code, time.Since(revoked), r.stderr)
	if r.code != 76 {
		t.Fatalf("exit %d; want 76", r.code)
	}
	if !strings.Contains(r.stderr, "lost") {
		t.Errorf("stderr %q does not say the lock was lost", r.stderr)
	}
	waitFor(t, 5*time.Second, "the child to be gone", func() bool { return gone(child) })
}

// TestServerGoneKills76: when the cluster vanishes the lock is presumed
// lost before its TTL runs out; the child is killed and withlock exits 76.
func TestServerGoneKills76(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	pidFile := filepath.Join(t.TempDir(), "child")
	holder := start(t, wl(t, s, "--ttl", "2s", "--grace", "1s", "job", "--", "sh", "-c", `echo $$ > "$0"; exec sleep 600`, pidFile))
	child := readPid(t, pidFile)

	stopped := time.Now()
	s.Stop()
	// Loss within the 2 s TTL, 1 s grace, up to 2 s of bounded release.
	r := holder.wait(t, 2*time.Second+time.Second+2*time.Second+3*time.Second)
	t.Logf("exit %d after %s; stderr %q", r.code, time.Since(stopped), r.stderr)
	if r.code != 76 {
		t.Fatalf("exit %d; want 76", r.code)
	}
	waitFor(t, 5*time.Second, "the child to be gone", func() bool { return gone(child) })
}

// TestPartitionStopsChildBeforeExpiry: when the holder is cut off from the
// cluster (a partition: the member runs on and expires the lease on its own
// clock) the child — here one that ignores TERM, so it lives out the whole
// grace — is gone before the lease expires, that is before another host
// can get the lock; withlock exits 76.
func TestPartitionStopsChildBeforeExpiry(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	member := s.DirectClient(t)
	pidFile := filepath.Join(t.TempDir(), "child")
	holder := start(t, wl(t, s, "--ttl", "6s", "--grace", "2s", "job", "--", "sh", "-c",
		`trap "" TERM; echo $$ > "$0"; while :; do sleep 0.1; done`, pidFile))
	child := readPid(t, pidFile)
	lease := ownerLease(t, member, "job")

	partitioned := time.Now()
	s.Partition()
	var childGone, leaseGone time.Duration
	waitFor(t, 20*time.Second, "the child to be gone and the lease to expire", func() bool {
		if childGone == 0 && gone(child) {
			childGone = time.Since(partitioned)
		}
		if leaseGone == 0 {
			if resp, err := member.TimeToLive(etcdtest.Ctx(t), lease); err == nil && resp.TTL == -1 {
				leaseGone = time.Since(partitioned)
			}
		}
		return childGone != 0 && leaseGone != 0
	})
	t.Logf("after the partition: child gone at %s, lease expired at %s", childGone, leaseGone)
	if childGone >= leaseGone {
		t.Errorf("the child was still running when the lease expired (gone at %s, lease expired at %s)", childGone, leaseGone)
	}
	if r := holder.wait(t, 10*time.Second); r.code != 76 {
		t.Errorf("exit %d (stderr %q); want 76", r.code, r.stderr)
	}
}

// TestUnreachableExits73: a cluster that cannot be reached ends the run
// with 73 after the dial timeout, naming the endpoint and the error; the
// command never runs.
func TestUnreachableExits73(t *testing.T) {
	endpoint := etcdtest.ClosedEndpoint(t)
	ran := filepath.Join(t.TempDir(), "ran")
	cmd := wl(t, &etcdtest.Server{Endpoint: endpoint}, "--etcd-dial-timeout", "1s", "job", "--", "touch", ran)
	r := run(t, cmd)
	t.Logf("exit %d after %s: %s", r.code, r.took, r.stderr)
	if r.code != 73 {
		t.Fatalf("exit %d; want 73", r.code)
	}
	if !strings.Contains(r.stderr, endpoint) || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("stderr %q should name %s and the connection error", r.stderr, endpoint)
	}
	if r.took > 10*time.Second {
		t.Errorf("took %s; want about the 1s dial timeout", r.took)
	}
	if exists(ran) {
		t.Error("the command ran")
	}
}
