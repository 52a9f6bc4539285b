// Package testwait is the tests' one way to wait for a condition: poll it
// until it holds, and fail the test (For) or report false (Until) when the
// deadline passes first. Tests wait for what they need to see, never a
// fixed sleep.
package testwait

import (
	"testing"
	"time"
)

// For polls cond until it holds; after d it fails t, naming what was
// awaited.
func For(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(d, cond) {
		t.Fatalf("timed out after %v waiting for %s", d, what)
	}
}

// Until polls cond with a growing interval (1 ms to 50 ms) until it holds
// or d passes, and reports whether it held. Safe from any goroutine.
func Until(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	interval := time.Millisecond
	for !cond() {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(interval)
		interval = min(2*interval, 50*time.Millisecond)
	}
	return true
}

// Recv receives from ch; after d it fails t, naming what was awaited.
func Recv[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out after %v waiting for %s", d, what)
		panic("unreachable")
	}
}
