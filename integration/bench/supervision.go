//go:build linux

package main

// supervision: withlock as a process supervisor next to tini and timeout(1).
func init() {
	register(section{
		order:  40,
		name:   "supervision",
		title:  "supervise `sleep 0` (wall per run)",
		unit:   "ms",
		note:   "withlock also takes a lock; tini -s -g: subreaper, signals to the child's group",
		runs:   func(b *bench) int { return b.n },
		warmup: true,
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("supervision")
			return []*tool{
				b.withlockTool("withlock run --dir D sv -- sleep 0", b.wallOf(0, b.withlock, "run", "--dir", dir, "sv", "--", "sleep", "0")),
				peer("tini", "tini -s -g -- sleep 0", func(path string) func(int) (float64, error) {
					return b.wallOf(0, path, "-s", "-g", "--", "sleep", "0")
				}),
				peer("timeout", "timeout -k 1 10 sleep 0", func(path string) func(int) (float64, error) {
					return b.wallOf(0, path, "-k", "1", "10", "sleep", "0")
				}),
			}, func() {}, nil
		},
	})
}
