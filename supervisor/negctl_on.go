//go:build withlock_nosubreaper

package supervisor

// brokenNoSubreaper: this build is no subreaper and leaves leftovers alone
// (a negative control; never a release build).
const brokenNoSubreaper = true
