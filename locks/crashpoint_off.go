//go:build !withlock_crashpoints

package locks

// crashPoint marks a point where the integration suite's crash tests kill
// the process (build tag withlock_crashpoints). In release builds it is
// nothing.
func crashPoint(string) {}
