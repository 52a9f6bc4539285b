package locks

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkScopeRegisterRelease1000 is one holder's start and exit with
// 1,000 live allocations in the registry: two locked read-modify-writes,
// each checking every holder's liveness (kill + /proc/<pid>/stat), the
// conflict check, the backup and the in-place rewrite with fsync.
// Target (issue 4): under 5 ms per register+release.
func BenchmarkScopeRegisterRelease1000(b *testing.B) {
	f := &ScopeFile{Path: filepath.Join(b.TempDir(), "scope.lock")}
	me := self(b)
	reg := &ScopeRegistry{}
	for i := range 1000 {
		reg.Allocations = append(reg.Allocations, ScopeAllocation{
			Name: "holder" + strconv.Itoa(i), PID: me.PID, PIDStart: me.Start,
			Socket:     "/run/withlock/holder" + strconv.Itoa(i) + ".sock",
			ScopeAllow: []string{"/bench/tree" + strconv.Itoa(i) + ":write:recursive"},
			ScopeDeny:  []string{}, CreatedAt: 1700000000.25,
		})
	}
	if err := os.WriteFile(f.Path, reg.Encode(), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	q := me.request("bench", "/bench/new:write:recursive")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Register(ctx, q); err != nil {
			b.Fatal(err)
		}
		if err := f.Release(ctx, "bench", me.PID); err != nil {
			b.Fatal(err)
		}
	}
}
