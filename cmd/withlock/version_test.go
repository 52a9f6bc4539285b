package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionFromBuildInfo(t *testing.T) {
	const unknown = "devel (no version or commit recorded in the build)"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"go build in a checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261130094401-4077128fdd54+dirty"}},
			"v0.0.0-20261130094401-4077128fdd54+dirty"},
		{"nothing recorded", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, unknown},
		{"no build info", nil, unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionFromBuildInfo(tc.bi); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The stamped version wins over anything the build recorded.
func TestVersionStringPrefersStamp(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.9.9-3-gabcdef"
	if got := versionString(); got != version {
		t.Errorf("versionString() = %q, want the stamped %q", got, version)
	}
	version = ""
	if got := versionString(); got == "" || got == "dev" || !strings.HasPrefix(got, "v") && !strings.HasPrefix(got, "devel") {
		t.Errorf("versionString() without a stamp = %q", got)
	}
}
