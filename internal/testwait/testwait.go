// Package testwait is the tests' one way to wait for a condition: poll it
// until it holds, and fail the test when the deadline passes first. Tests
// wait for what they need to see, never a fixed sleep.
package testwait

import (
	"testing"
	"time"
)

// For polls cond every 5 ms until it holds; after d it fails t, naming
// what was awaited.
func For(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
