//go:build etcd

package etcdlock

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// A --max 2 slot's key is created only while the size key still says 2:
// once a --max 3 has taken the size over (between our agreeMax and our
// slot's transaction, when two first holders disagree at the same
// instant), the try fails with errSizeChanged and leaves no key;
// AcquireSlot then agrees again.
func TestSlotKeepsItsSize(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := &Locker{Endpoints: []string{s.Endpoint}, TTL: 5 * time.Second, DialTimeout: 2 * time.Second}
	ctx := context.Background()
	cl := s.Client(t)
	if _, err := cl.Put(etcdtest.Ctx(t), l.maxKey("b"), "3"); err != nil {
		t.Fatal(err)
	}
	_, err := l.acquire(ctx, locks.SlotRunID("b", locks.ModeMax, 0), 0, acquireKind{max: 2})
	if !errors.Is(err, errSizeChanged) {
		t.Fatalf("a --max 2 slot with the size at 3: %v; want errSizeChanged", err)
	}
	resp, err := cl.Get(etcdtest.Ctx(t), l.slotsPrefix("b"), clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("slot keys after the refused try: %v %v", resp, err)
	}
	lock, k, err := l.AcquireSlot(ctx, "b", 2, 0)
	if err != nil {
		t.Fatalf("AcquireSlot --max 2 with the size at 3 and no holder: %v", err)
	}
	defer lock.Release()
	if _, _, err := l.AcquireSlot(ctx, "b", 3, 0); !errors.Is(err, locks.ErrModeMismatch) {
		t.Fatalf("--max 3 beside the --max 2 holder of slot %d: %v; want a mismatch", k, err)
	}
}
