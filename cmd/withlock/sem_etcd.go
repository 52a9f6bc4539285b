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
	return &etcdUserLock{lock, runID, []string{"WITHLOCK_SLOT=" + strconv.Itoa(slot), "WITHLOCK_MAX=" + strconv.Itoa(b.max)}}, nil
}

// etcdSharedBackend takes a run id shared (run --shared) in etcd.
type etcdSharedBackend struct{ l *etcdlock.Locker }

// Acquire tells the child it holds the run id shared, as the file
// backend's shared holders are told (WITHLOCK_SHARED=1). There is no
// WITHLOCK_SLOT: etcd's shared holders are keys of the run id's own mutex,
// not numbered slots.
func (b etcdSharedBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	lock, err := b.l.AcquireShared(ctx, runID, wait)
	if err != nil {
		return nil, err
	}
	return &etcdUserLock{lock, runID, []string{"WITHLOCK_SHARED=1"}}, nil
}

// etcdUserLock tells the child the run id it named (not the slot's key)
// and what it holds of it (env).
type etcdUserLock struct {
	*etcdlock.Lock
	runID string
	env   []string
}

func (l *etcdUserLock) Env() []string {
	env := l.Lock.Env()
	for i, kv := range env {
		if strings.HasPrefix(kv, "WITHLOCK_RUN_ID=") {
			env[i] = "WITHLOCK_RUN_ID=" + l.runID
		}
	}
	return append(env, l.env...)
}
