//go:build !withlock_broken_lockid

package locks

// brokenLockIDCheck is true only in the deliberately broken build that the
// scorecard's negative controls use to prove their rows can fail.
const brokenLockIDCheck = false
