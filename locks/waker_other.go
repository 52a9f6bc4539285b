//go:build !linux

package locks

import (
	"context"
	"time"
)

// waker without inotify or pidfd: Wait sleeps, cut short by the context.
type waker struct{ ctx context.Context }

func newWaker(ctx context.Context, dir, name string) *waker { return &waker{ctx: ctx} }
func newWakerFor(ctx context.Context, dir, name string, more ...string) *waker {
	return &waker{ctx: ctx}
}
func (w *waker) Watching() bool { return false }
func (w *waker) Close()         {}

func (w *waker) Wait(timeout time.Duration, pid int, granted <-chan struct{}) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-w.ctx.Done():
	case <-granted:
	}
}
