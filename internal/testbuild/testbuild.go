// Package testbuild holds what the integration suite's special builds of
// withlock switch on: crash points (build tag withlock_crashpoints) and the
// deliberately broken lock_id check of the negative controls (build tag
// withlock_broken_lockid), and a run lock without its tree file, bound to
// withlock's pid and TTL only as before (build tag withlock_notree). In a release build every hook is off, and the
// code that consults them pays one comparison.
package testbuild

// CrashAt, when set, is called at named points of the lock's state
// transitions: acquire:after-temp, acquire:after-link, renew:after-temp,
// reclaim:after-rename, tree:after-create, scope:mid-write, and the
// *:verified points of renew and release. The crash build sets it to
// SIGKILL the process at the point WITHLOCK_CRASH_AT names, and to block
// for ever (a hung filesystem) at the point WITHLOCK_HANG_AT names.
var CrashAt func(point string)

// SkipLockIDCheck, set only in the negative-control build, makes renew and
// release skip their check that the lock file still carries their lock_id,
// so the scorecard can show that its rows fail without it.
var SkipLockIDCheck bool

// NoTree, set only in the negative-control build, makes acquisitions take
// no tree file: the lock no longer outlives withlock in its command's
// surviving processes, which the scorecard's tree rows must then show.
var NoTree bool

// TrustForeignProc, set only in the negative-control build
// withlock_broken_procview, makes proc.View trust a /proc of another pid
// namespace as its own, as withlock did before it checked, so the
// scorecard's pid-namespace row can show that it fails without the check.
var TrustForeignProc bool

// CollectAnyOwner, set only in the negative-control build
// withlock_broken_gcowner, makes gc try to remove every leftover in a shared
// dir, other users' too, as it did before it checked the owner, so the
// scorecard's shared-dir gc row can show that it fails without the check.
var CollectAnyOwner bool
