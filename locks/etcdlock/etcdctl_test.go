//go:build etcd

package etcdlock_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// etcdctlLock starts `etcdctl lock NAME` (no command: it holds the lock
// until signalled) and returns it with a channel that receives the first
// line it prints — the key, once it has the lock.
func etcdctlLock(t *testing.T, s *etcdtest.Server, name string) (*exec.Cmd, <-chan string) {
	t.Helper()
	bin, err := exec.LookPath("etcdctl")
	if err != nil {
		t.Skip("etcdctl not installed (Debian: apt-get install etcd-client); CI installs it, so this only skips locally")
	}
	cmd := exec.Command(bin, "--endpoints="+s.Endpoint, "lock", name)
	cmd.Env = []string{"ETCDCTL_API=3"}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, err := r.ReadString('\n')
		if err == nil {
			lines <- strings.TrimSpace(line)
		}
		io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("etcdctl stderr: %s", stderr.String())
		}
	})
	return cmd, lines
}

func keyWithin(t *testing.T, lines <-chan string, d time.Duration, what string) string {
	t.Helper()
	return testwait.Recv(t, lines, d, "etcdctl lock: "+what)
}

// TestEtcdctlHoldsWithlockWaits: while `etcdctl lock` holds the run id's
// mutex withlock sees it held (by a client without holder information) and
// gets it once etcdctl lets go.
func TestEtcdctlHoldsWithlockWaits(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	ctl, lines := etcdctlLock(t, s, l.MutexName("job"))
	key := keyWithin(t, lines, 10*time.Second, "no lock")

	_, err := l.Acquire(context.Background(), "job", 0)
	var other *etcdlock.OtherClientError
	if !errors.As(err, &other) || !errors.Is(err, locks.ErrHeld) || other.Owner.Key != key {
		t.Fatalf("acquire while etcdctl holds %s: %v; want an OtherClientError for that key", key, err)
	}
	t.Logf("conflict line: %v", err)

	got := acquireInBackground(l, "job", 20*time.Second)
	waitFor(t, 10*time.Second, "withlock to queue behind etcdctl", func() bool { return len(contenders(t, s, l, "job")) == 2 })
	ctl.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("acquire after etcdctl let go: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("withlock did not get the lock within 10s of etcdctl letting go")
	}
}

// TestWithlockHoldsEtcdctlWaits: `etcdctl lock` queues behind withlock,
// does not get the lock while withlock holds it, and gets it (with a
// larger revision) once withlock releases.
func TestWithlockHoldsEtcdctlWaits(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	lock := mustAcquire(t, l, "job", 0)
	_, lines := etcdctlLock(t, s, l.MutexName("job"))
	waitFor(t, 10*time.Second, "etcdctl to queue behind withlock", func() bool { return len(contenders(t, s, l, "job")) == 2 })
	select {
	case k := <-lines:
		t.Fatalf("etcdctl got the lock (%s) while withlock holds it", k)
	default:
	}

	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	key := keyWithin(t, lines, 10*time.Second, "no lock after withlock released")
	resp, err := s.Client(t).Get(etcdtest.Ctx(t), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcdctl's key %s: %v %v", key, resp, err)
	}
	if rev := resp.Kvs[0].CreateRevision; rev <= lock.FencingToken() {
		t.Errorf("etcdctl's key revision %d is not after withlock's token %d", rev, lock.FencingToken())
	}
}
