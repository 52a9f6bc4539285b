package main

import "runtime/debug"

// versionFromBuildInfo is the version the go command recorded in the
// binary, or a line saying why there is none (built with -buildvcs=false or
// outside a checkout) instead of a bare "dev".
func versionFromBuildInfo(bi *debug.BuildInfo) string {
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel (no version or commit recorded in the build)"
}
