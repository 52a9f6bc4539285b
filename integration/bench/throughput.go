//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// throughput: many short critical sections on one contended lock.
func init() {
	register(section{
		order: 30,
		name:  "throughput",
		title: "contention: workers × critical sections of `true` on one lock (total wall)",
		unit:  "s",
		note:  "each worker runs its critical sections one after another; all workers start together",
		runs:  func(b *bench) int { return b.throughputRounds },
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("throughput")
			lockFile := filepath.Join(dir, "flock.lock")
			shape := fmt.Sprintf("%d workers × %d", b.workers, b.perWorker)
			return []*tool{
				b.withlockTool("withlock run --wait 60s --dir D tp -- true, "+shape,
					b.contended(b.withlock, "run", "--dir", dir, "--wait", "60s", "tp", "--", "true")),
				peer("flock", "flock -w 60 F true, "+shape, func(path string) func(int) (float64, error) {
					return b.contended(path, "-w", "60", lockFile, "true")
				}),
				b.goFloorTool("gofloor F true, "+shape, b.contended(b.goFloor, filepath.Join(dir, "gofloor.lock"), "true")),
				b.goFloorSignalsTool("gofloor -signals F true, "+shape, b.contended(b.goFloor, "-signals", filepath.Join(dir, "gofloor-signals.lock"), "true")),
			}, func() {}, nil
		},
	})
}

// contended runs argv workers×perWorker times, workers at once, and returns
// the total wall time in seconds.
func (b *bench) contended(argv ...string) func(int) (float64, error) {
	return func(int) (float64, error) {
		var wg sync.WaitGroup
		errs := make(chan error, b.workers)
		start := time.Now()
		for range b.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range b.perWorker {
					if _, err := b.runExpect(0, argv...); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		close(errs)
		if err := <-errs; err != nil {
			return 0, err
		}
		return wall.Seconds(), nil
	}
}
