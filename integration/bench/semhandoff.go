//go:build linux

package main

// handoff-sem: the hand-off of a semaphore slot and of a shared lock to an
// exclusive waiter, against the exclusive run lock's (the handoff section).
func init() {
	register(section{
		order: 21,
		name:  "handoff-sem",
		title: "hand-off of a --max slot and shared → exclusive, against the exclusive lock",
		unit:  "ms",
		note: "as handoff: the holder's child's last timestamp to the waiter's child's first; --max 1 makes the " +
			"waiter wait for the one slot (queued on the slot line, woken by inotify); shared → exclusive: the " +
			"waiter is a plain run that holds the run id and waits for a --shared holder to leave",
		base: "exclusive",
		runs: func(b *bench) int { return b.handoffRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("handoff-sem")
			ex := b.withlockTool("withlock run --wait 10s (holder and waiter)", func(int) (float64, error) {
				return b.handoff(
					[]string{b.withlock, "run", "--dir", dir, "ex", "--"},
					[]string{b.withlock, "run", "--dir", dir, "--wait", "10s", "ex", "--"},
				)
			})
			ex.name = "exclusive"
			sem := b.withlockTool("withlock run --max 1 --wait 10s (holder and waiter)", func(int) (float64, error) {
				return b.handoff(
					[]string{b.withlock, "run", "--dir", dir, "--max", "1", "sem", "--"},
					[]string{b.withlock, "run", "--dir", dir, "--max", "1", "--wait", "10s", "sem", "--"},
				)
			})
			sem.name = "--max 1"
			rw := b.withlockTool("withlock run --shared (holder), withlock run --wait 10s (waiter)", func(int) (float64, error) {
				return b.handoff(
					[]string{b.withlock, "run", "--dir", dir, "--shared", "rw", "--"},
					[]string{b.withlock, "run", "--dir", dir, "--wait", "10s", "rw", "--"},
				)
			})
			rw.name = "shared → excl"
			return []*tool{sem, ex, rw}, func() {}, nil
		},
	})
}
