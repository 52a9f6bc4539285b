//go:build !linux

package locks

import "os"

// Without flock(2) there is no hold: waiters poll (see waker_other.go).
func (r *RunLocker) requestHold(runID string) *holdRequest { return nil }
func (r *RunLocker) tryHold(f *os.File) bool               { return false }
