//go:build !withlock_nosubreaper

package supervisor

// brokenNoSubreaper is true only in the deliberately broken build that the
// scorecard's negative controls use to prove the teardown rows can fail.
const brokenNoSubreaper = false
