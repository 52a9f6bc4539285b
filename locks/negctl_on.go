//go:build withlock_broken_lockid

package locks

// brokenLockIDCheck: this build skips the lock_id check before renew and
// release (a negative control; never a release build).
const brokenLockIDCheck = true
