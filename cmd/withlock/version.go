package main

import "runtime/debug"

// versionFromBuildInfo is the version a build without -X main.version
// reports, from what the go command recorded in the binary:
//   - `go install github.com/withlock/withlock/cmd/withlock@v1.2.3`: v1.2.3;
//   - `go build` in a git checkout (Go 1.24+): the pseudo-version made from
//     the commit, e.g. v0.0.0-20261201195150-39808a8b2b23, "+dirty" when the
//     tree had changes;
//   - an older go or a main module without one: the VCS revision
//     (vcs.revision, vcs.modified) as "devel+<12 hex digits>[-dirty]";
//   - none of these (built with -buildvcs=false, or outside a checkout):
//     "devel (no version or commit recorded in the build)", which says why
//     instead of a bare "dev".
func versionFromBuildInfo(bi *debug.BuildInfo) string {
	const unknown = "devel (no version or commit recorded in the build)"
	if bi == nil {
		return unknown
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return unknown
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel+" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}
