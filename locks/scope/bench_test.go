package scope

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRegisterRelease is one holder's start and exit with 100, 1,000
// and 10,000 live allocations in the registry: two locked
// read-modify-writes, the start checking every holder's pid (kill(pid, 0),
// one real check per allocation; none overlaps the request, so none is read
// from /proc), the conflict check, the backup and the in-place rewrite with
// fsync. The cost must grow
// linearly with the allocations (issue 18): compare ns/op across sizes.
//
// "tmpfs" is where the registry lives by default (/run or /tmp; here
// /dev/shm stands in), "disk" is the test's temp dir, where every fsync
// reaches the device.
func BenchmarkRegisterRelease(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("tmpfs/%d", n), func(b *testing.B) {
			dir, err := os.MkdirTemp("/dev/shm", "withlock-bench-")
			if err != nil {
				b.Skipf("no tmpfs at /dev/shm: %v", err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			benchRegisterRelease(b, filepath.Join(dir, "scope.lock"), n)
		})
		b.Run(fmt.Sprintf("disk/%d", n), func(b *testing.B) {
			benchRegisterRelease(b, filepath.Join(b.TempDir(), "scope.lock"), n)
		})
	}
}

func benchRegisterRelease(b *testing.B, path string, holders int) {
	f := &Registry{Path: path}
	me := self(b)
	reg := &Table{}
	for i := range holders {
		reg.Allocations = append(reg.Allocations, Allocation{
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
	before := processCPU(b)
	for b.Loop() {
		if _, err := f.Register(ctx, q); err != nil {
			b.Fatal(err)
		}
		if err := f.Release(ctx, "bench", me.PID); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time (user + system, all threads) per op: what the operation
	// costs whatever else the machine runs. Wall time is ns/op.
	b.ReportMetric(float64(processCPU(b)-before)/float64(b.N), "cpu-ns/op")
}

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
