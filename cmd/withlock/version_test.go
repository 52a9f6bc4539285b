package main

import (
	"strings"
	"testing"
)

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
