//go:build linux

package main

import "path/filepath"

// overhead: what taking and releasing a lock costs around the smallest command.
func init() {
	register(section{
		order: 10,
		name:  "overhead",
		title: "lock, run `true`, release (wall per run)",
		unit:  "ms",
		note: "fork+exec+wait of the whole command; `true` alone is the floor; go-floor (./gofloor) is the smallest " +
			"Go lock wrapper (open, flock, fork+exec, wait4): what any Go binary costs next to flock, a C program; " +
			"go-floor -signals also subscribes to every catchable signal and forwards them, as SPEC §5 asks of withlock",
		runs:   func(b *bench) int { return b.n },
		warmup: true,
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("overhead")
			lockFile := filepath.Join(dir, "flock.lock")
			baseDir := b.dir("overhead-baseline")
			return append([]*tool{
				b.withlockTool("withlock run --dir D ov -- true", b.wallOf(0, b.withlock, "run", "--dir", dir, "ov", "--", "/bin/true")),
				peer("flock", "flock F true", func(path string) func(int) (float64, error) {
					return b.wallOf(0, path, lockFile, "/bin/true")
				}),
				b.goFloorTool("gofloor F true", b.wallOf(0, b.goFloor, filepath.Join(dir, "gofloor.lock"), "/bin/true")),
				b.goFloorSignalsTool("gofloor -signals F true", b.wallOf(0, b.goFloor, "-signals", filepath.Join(dir, "gofloor-signals.lock"), "/bin/true")),
				peer("true", "true", func(path string) func(int) (float64, error) {
					return b.wallOf(0, path)
				}),
			}, b.baselineTools("withlock (an earlier build) run --dir D ov -- true", func(path string) func(int) (float64, error) {
				return b.wallOf(0, path, "run", "--dir", baseDir, "ov", "--", "/bin/true")
			})...), func() {}, nil
		},
	})
}
