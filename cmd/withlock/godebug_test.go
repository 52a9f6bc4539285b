package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// godebug.go's //go:debug updatemaxprocs=0 reaches the binary's default
// GODEBUG, which is what the runtime reads at start.
func TestGOMAXPROCSUpdaterIsOff(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build info")
	}
	for _, s := range bi.Settings {
		if s.Key == "DefaultGODEBUG" {
			for _, kv := range strings.Split(s.Value, ",") {
				if kv == "updatemaxprocs=0" {
					return
				}
			}
			t.Fatalf("DefaultGODEBUG=%q lacks updatemaxprocs=0", s.Value)
		}
	}
	t.Fatal("no DefaultGODEBUG in the build info: updatemaxprocs is at its default")
}
