//go:build !withlock_crashpoints

package scope

// crashPointsEnabled says whether this is the crash-point test build.
const crashPointsEnabled = false

// crashPoint marks a point where the integration suite's crash tests kill
// the process (build tag withlock_crashpoints). In release builds it is
// nothing.
func crashPoint(string) {}
