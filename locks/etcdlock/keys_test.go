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

// TestLostAfter: a silent lease is presumed lost the grace before its TTL
// less the margin, but never sooner than a healthy lease's keepalive gap
// (TTL/3 on a 500 ms tick, plus a round trip); fits says whether the whole
// grace was taken off.
func TestLostAfter(t *testing.T) {
	cases := []struct {
		ttl, grace, want time.Duration
		fits             bool
	}{
		{30 * time.Second, 0, 28 * time.Second, true},
		{30 * time.Second, 10 * time.Second, 18 * time.Second, true},
		{6 * time.Second, 2 * time.Second, 3 * time.Second, true},
		{30 * time.Second, 20 * time.Second, 10*time.Second + 700*time.Millisecond, false},
		{10 * time.Second, 10 * time.Second, 10*time.Second/3 + 700*time.Millisecond, false},
		{time.Second, time.Second, time.Second, false},
		{time.Second, 0, time.Second, true},
	}
	for _, c := range cases {
		got, fits := lostAfter(c.ttl, c.grace)
		if got != c.want || fits != c.fits {
			t.Errorf("lostAfter(%s, %s) = %s, %v; want %s, %v", c.ttl, c.grace, got, fits, c.want, c.fits)
		}
		if gap := c.ttl/3 + 500*time.Millisecond; got <= gap && c.ttl > time.Second {
			t.Errorf("lostAfter(%s, %s) = %s: a healthy lease answers up to %s apart", c.ttl, c.grace, got, gap)
		}
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
