//go:build etcd

package etcdlock_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestUnreachableAtStart: with no wait, a cluster that cannot be reached
// ends after DialTimeout with ErrUnavailable naming the endpoint and why.
func TestUnreachableAtStart(t *testing.T) {
	endpoint := etcdtest.ClosedEndpoint(t)
	l := &etcdlock.Locker{Endpoints: []string{endpoint}, DialTimeout: 500 * time.Millisecond}
	start := time.Now()
	_, err := l.Acquire(context.Background(), "job", 0)
	took := time.Since(start)
	if !errors.Is(err, locks.ErrUnavailable) {
		t.Fatalf("acquire: %v; want ErrUnavailable", err)
	}
	t.Logf("after %s: %v", took, err)
	if !strings.Contains(err.Error(), endpoint) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q should name %s and the connection error", err, endpoint)
	}
	if took < 500*time.Millisecond || took > 3*time.Second {
		t.Errorf("gave up after %s; want about the 500ms dial timeout", took)
	}
	checkNoLockGoroutines(t)
}

// TestUnreachableRetriedWithinWait: a cluster that comes up while we wait
// is used; one that does not is given up on when the wait ends.
func TestUnreachableRetriedWithinWait(t *testing.T) {
	s := etcdtest.New(t, etcdtest.Options{})
	l := newLocker(s)
	l.DialTimeout = 300 * time.Millisecond
	retries := &lineCounter{}
	l.Log = zerolog.New(retries)
	got := acquireInBackground(l, "job", 20*time.Second)
	waitFor(t, 10*time.Second, "two failed attempts", func() bool { return retries.count() >= 2 })
	s.Start(t)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("acquire once the server is up: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no lock within 15s of the server coming up")
	}

	s.Stop()
	start := time.Now()
	_, err := l.Acquire(context.Background(), "job", 1500*time.Millisecond)
	if took := time.Since(start); !errors.Is(err, locks.ErrUnavailable) || took < 1500*time.Millisecond || took > 4*time.Second {
		t.Errorf("acquire with the server gone and a 1.5s wait: %v after %s; want ErrUnavailable after about 1.5s", err, took)
	}
}

// TestTLS: a cluster that requires client certificates is used with them
// and refused without, quickly and naming the TLS problem.
func TestTLS(t *testing.T) {
	certs := etcdtest.NewCerts(t)
	s := etcdtest.Start(t, etcdtest.Options{TLS: certs})
	cfg, err := certs.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	l := newLocker(s)
	l.TLS = cfg
	lock := mustAcquire(t, l, "job", 0)
	if !strings.HasPrefix(s.Endpoint, "https://") || lock.FencingToken() <= 0 {
		t.Errorf("endpoint %s, token %d", s.Endpoint, lock.FencingToken())
	}

	noCert := newLocker(s)
	noCert.DialTimeout = time.Second
	noCert.TLS = &tls.Config{RootCAs: cfg.RootCAs}
	_, err = noCert.Acquire(context.Background(), "job2", 0)
	if !errors.Is(err, locks.ErrUnavailable) {
		t.Fatalf("acquire without a client certificate: %v; want ErrUnavailable", err)
	}
	t.Logf("without a client certificate: %v", err)
}

// TestPasswordAuth: user and password reach the cluster; a wrong password
// is refused at once, not retried until the wait ends.
func TestPasswordAuth(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	etcdtest.EnableAuth(t, s, "root", "s3cret")
	l := newLocker(s)
	l.Username, l.Password = "root", "s3cret"
	mustAcquire(t, l, "job", 0)

	wrong := newLocker(s)
	wrong.Username, wrong.Password = "root", "wrong"
	start := time.Now()
	_, err := wrong.Acquire(context.Background(), "job2", 10*time.Second)
	if !errors.Is(err, locks.ErrUnavailable) || !strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("wrong password: %v; want ErrUnavailable saying authentication failed", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("wrong password refused after %s; want it at once, not after the wait", took)
	}
}

// lineCounter counts the log lines written to it.
type lineCounter struct {
	mu sync.Mutex
	n  int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += bytes.Count(p, []byte("\n"))
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
