//go:build !linux

package locks

import (
	"testing"
	"time"
)

// awaitQueuedFlock: without /proc/locks the queued waiter cannot be seen;
// the race tests then only give it a moment (their outcome does not depend
// on it, only which path they exercise).
func awaitQueuedFlock(t *testing.T, path string) { time.Sleep(20 * time.Millisecond) }
