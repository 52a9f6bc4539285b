//go:build !linux

package scope

// processAlive cannot judge a pid without /proc; the registry itself
// is Linux-only (openLocked reports errors.ErrUnsupported), so this only
// keeps the package building.
func processAlive(pid int, start uint64) bool { return pid > 0 }
