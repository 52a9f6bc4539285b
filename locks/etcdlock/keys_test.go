//go:build etcd

package etcdlock

import (
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestSplitKey(t *testing.T) {
	l := &Locker{}
	cases := []struct {
		runID string
		lease clientv3.LeaseID
	}{{"nightly-backup", 0x694d}, {"a/b", 1}, {"100%", 0x7fffffffffffffff}, {"a%2Fb", 2}, {"with space", 3}}
	for _, c := range cases {
		key := l.MutexName(c.runID) + "/" + leaseHex(c.lease)
		runID, lease, ok := splitKey(DefaultPrefix, key)
		if !ok || runID != c.runID || lease != c.lease {
			t.Errorf("splitKey(%q) = %q, %x, %v; want %q, %x", key, runID, lease, ok, c.runID, c.lease)
		}
	}
	for _, bad := range []string{"/withlock/run/job", "/withlock/run/job/notHex", "/other/job/1", "/withlock/run//1"} {
		if runID, _, ok := splitKey(DefaultPrefix, bad); ok {
			t.Errorf("splitKey(%q) accepted as run %q", bad, runID)
		}
	}
	if got := l.MutexName("a/b"); got != "/withlock/run/a%2Fb" {
		t.Errorf("MutexName(a/b) = %q", got)
	}
}

// TestSafetyMargin: the margin stays below the keepalive gap (TTL/3 on a
// 500 ms tick) so a healthy lease never trips it, and is capped at 2 s.
func TestSafetyMargin(t *testing.T) {
	for _, ttl := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 30 * time.Second, time.Hour} {
		m := safetyMargin(ttl)
		gap := ttl/3 + 500*time.Millisecond
		if m < 0 || m > 2*time.Second || ttl-m <= gap {
			t.Errorf("safetyMargin(%s) = %s: leaves %s, keepalive gap up to %s", ttl, m, ttl-m, gap)
		}
	}
	if m := safetyMargin(30 * time.Second); m != 2*time.Second {
		t.Errorf("safetyMargin(30s) = %s; want 2s", m)
	}
}

func TestSplitEndpoint(t *testing.T) {
	cases := []struct {
		ep, network, addr  string
		tlsDefault, secure bool
	}{
		{"http://10.0.0.1:2379", "tcp", "10.0.0.1:2379", true, false},
		{"https://etcd-a:2379", "tcp", "etcd-a:2379", false, true},
		{"10.0.0.1:2379", "tcp", "10.0.0.1:2379", false, false},
		{"10.0.0.1:2379", "tcp", "10.0.0.1:2379", true, true},
		{"unix:///run/etcd.sock", "unix", "/run/etcd.sock", false, false},
		{"unixs:/run/etcd.sock", "unix", "/run/etcd.sock", false, true},
	}
	for _, c := range cases {
		network, addr, secure := splitEndpoint(c.ep, c.tlsDefault)
		if network != c.network || addr != c.addr || secure != c.secure {
			t.Errorf("splitEndpoint(%q, %v) = %s %s %v", c.ep, c.tlsDefault, network, addr, secure)
		}
	}
}
