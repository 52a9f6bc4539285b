//go:build linux

package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/withlock/withlock/internal/schedstat"
)

// waiting: CPU burnt while waiting for a lock that stays held.
func init() {
	register(section{
		order: 50,
		name:  "waiting",
		title: "CPU while waiting for a held lock (scheduler run time of all threads)",
		unit:  "ms CPU / 10 s",
		note: "CPU of all threads per 10 s of waiting, start-up excluded: summed from /proc/<pid>/task/*/schedstat every " +
			"50 ms (exact, where rusage on this VM is charged by timer ticks), from the moment the waiter is blocked " +
			"(quiet for two polls 100 ms apart; at the latest 1.5 s after its start) to its last sample before it exits; " +
			"withlock exits 75 and flock -w exits 1 when the wait runs out; a spinning waiter would show ~10,000 ms",
		runs: func(b *bench) int { return b.waitRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("waiting")
			lockFile := filepath.Join(dir, "flock.lock")
			var holders []*holder
			cleanup := func() {
				for _, h := range holders {
					h.stop()
				}
			}
			wait := b.wait.String()
			secs := strconv.FormatFloat(b.wait.Seconds(), 'f', -1, 64)
			wl := b.withlockTool("withlock run --wait "+wait+" --dir D w -- true", b.waitCPUOf(75, b.withlock, "run", "--dir", dir, "--wait", wait, "w", "--", "true"))
			if wl.missing == "" {
				h, err := b.startHolder([]string{b.withlock, "run", "--dir", dir, "w", "--", "sh", "-c", "echo ready; exec sleep 3600"})
				if err != nil {
					return nil, cleanup, err
				}
				holders = append(holders, h)
			}
			fl := peer("flock", "flock -w "+secs+" F true", func(path string) func(int) (float64, error) {
				return b.waitCPUOf(1, path, "-w", secs, lockFile, "true")
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

// blockedBy is the latest a waiter counts as blocked in its wait: start-up
// is over by then even on a loaded machine, and a waiter that is never
// quiet (one that spins) is measured from here.
const blockedBy = 1500 * time.Millisecond

// waitCPUOf measures argv, a waiter that exits with want once its wait
// runs out, in ms of CPU per 10 s of waiting: the run time the scheduler
// charged to its threads from the moment it is blocked (two quiet polls in
// a row, as waitBlocked judges; at the latest blockedBy after its start) to
// the last sample before it exits (every 50 ms), so start-up, which the
// start-up figure measures, is not counted as waiting.
func (b *bench) waitCPUOf(want int, argv ...string) func(int) (float64, error) {
	return func(int) (float64, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = b.env
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		started := time.Now()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		pid := cmd.Process.Pid
		var from, last time.Duration // CPU when blocked, at the last sample
		var fromAt, lastAt time.Time
		var prev time.Duration
		quiet := 0
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			// A process that is exiting sums fewer threads: a sample
			// below the last is not taken.
			if cpu, ok := schedstat.CPU(pid); ok && cpu >= last {
				now := time.Now()
				if fromAt.IsZero() && n%2 == 0 { // the quiet test polls every 100 ms
					if n > 0 && cpu-prev < 500*time.Microsecond && allSleeping(pid) {
						quiet++
					} else {
						quiet = 0
					}
					prev = cpu
					if quiet >= 2 || now.Sub(started) >= blockedBy {
						from, fromAt = cpu, now
					}
				}
				last, lastAt = cpu, now
			}
			select {
			case <-done:
				if code := cmd.ProcessState.ExitCode(); code != want {
					return 0, fmt.Errorf("%s exited %d, want %d", strings.Join(argv, " "), code, want)
				}
				window := lastAt.Sub(fromAt)
				if fromAt.IsZero() || window < time.Second {
					return 0, fmt.Errorf("%s: blocked for %v of its wait before exiting, too short to measure (wait longer: -wait)", strings.Join(argv, " "), window)
				}
				return ms(last-from) * float64(10*time.Second) / float64(window), nil
			case <-tick.C:
			}
		}
	}
}
