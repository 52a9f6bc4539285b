//go:build etcd

package etcdlock_test

import (
	"context"
	"testing"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// BenchmarkAcquireRelease: one acquisition (new client, lease, enqueue,
// TryLock) and its release (revoke), in process, against an embedded etcd.
func BenchmarkAcquireRelease(b *testing.B) {
	s := etcdtest.Start(b, etcdtest.Options{})
	l := newLocker(s)
	for b.Loop() {
		lock, err := l.Acquire(context.Background(), "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		_, stop := lock.Heartbeat()
		stop()
		if err := lock.Release(); err != nil {
			b.Fatal(err)
		}
	}
}
