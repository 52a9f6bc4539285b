//go:build etcd

package main

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/withlock/withlock/locks/etcdlock"
)

// etcdSlotBackend takes a slot of a semaphore (run --max) in etcd.
type etcdSlotBackend struct {
	l   *etcdlock.Locker
	max int
}

func (b etcdSlotBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	lock, slot, err := b.l.AcquireSlot(ctx, runID, b.max, wait)
	if err != nil {
		return nil, err
	}
	return &etcdSlotLock{Lock: lock, base: runID, slot: slot, max: b.max}, nil
}

// etcdSlotLock tells the child the run id it named and its slot.
type etcdSlotLock struct {
	*etcdlock.Lock
	base      string
	slot, max int
}

func (l *etcdSlotLock) Env() []string {
	env := l.Lock.Env()
	for i, kv := range env {
		if strings.HasPrefix(kv, "WITHLOCK_RUN_ID=") {
			env[i] = "WITHLOCK_RUN_ID=" + l.base
		}
	}
	return append(env, "WITHLOCK_SLOT="+strconv.Itoa(l.slot), "WITHLOCK_MAX="+strconv.Itoa(l.max))
}
