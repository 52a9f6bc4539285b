package main

import (
	"os/exec"
	"path/filepath"
)

// waiting: CPU burnt while waiting for a lock that stays held.
func init() {
	register(section{
		order: 50,
		name:  "waiting",
		title: "CPU while waiting 5 s for a held lock (utime+stime)",
		unit:  "ms CPU",
		note:  "withlock exits 75 and flock -w exits 1 when the wait runs out; a spinning waiter would show ~5000",
		runs:  func(b *bench) int { return b.waitRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("waiting")
			lockFile := filepath.Join(dir, "flock.lock")
			var holders []*holder
			cleanup := func() {
				for _, h := range holders {
					h.stop()
				}
			}
			wl := b.withlockTool("withlock run --wait 5s --dir D w -- true", b.cpuOf(75, b.withlock, "run", "--dir", dir, "--wait", "5s", "w", "--", "true"))
			if wl.missing == "" {
				h, err := b.startHolder([]string{b.withlock, "run", "--dir", dir, "w", "--", "sh", "-c", "echo ready; exec sleep 3600"})
				if err != nil {
					return nil, cleanup, err
				}
				holders = append(holders, h)
			}
			fl := peer("flock", "flock -w 5 F true", func(path string) func(int) (float64, error) {
				return b.cpuOf(1, path, "-w", "5", lockFile, "true")
			})
			if fl.missing == "" {
				path, _ := exec.LookPath("flock")
				h, err := b.startHolder([]string{path, lockFile, "sh", "-c", "echo ready; exec sleep 3600"})
				if err != nil {
					return nil, cleanup, err
				}
				holders = append(holders, h)
			}
			return []*tool{wl, fl}, cleanup, nil
		},
	})
}

// cpuOf measures the CPU time of argv exiting with want, in ms.
func (b *bench) cpuOf(want int, argv ...string) func(int) (float64, error) {
	return func(int) (float64, error) {
		o, err := b.runExpect(want, argv...)
		if err != nil {
			return 0, err
		}
		return ms(o.cpu()), nil
	}
}
