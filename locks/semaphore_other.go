//go:build !linux

package locks

func (r *RunLocker) requestQueue(runID string) *holdRequest { return nil }
func (r *RunLocker) markWaiting(runID string) func()        { return func() {} }

// WaitersOf cannot count waiters on this platform.
func (r *RunLocker) WaitersOf(runID string) (n int, ok bool) { return 0, false }
