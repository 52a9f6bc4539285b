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
		unit:  "ms CPU",
		note:  "summed from /proc/<pid>/task/*/schedstat every 50 ms until exit: exact, where rusage on this VM is charged by timer ticks; withlock exits 75 and flock -w exits 1 when the wait runs out; a spinning waiter would show the wait's length in ms",
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
			wait := b.wait.String()
			secs := strconv.FormatFloat(b.wait.Seconds(), 'f', -1, 64)
			wl := b.withlockTool("withlock run --wait "+wait+" --dir D w -- true", b.cpuOf(75, b.withlock, "run", "--dir", dir, "--wait", wait, "w", "--", "true"))
			if wl.missing == "" {
				h, err := b.startHolder([]string{b.withlock, "run", "--dir", dir, "w", "--", "sh", "-c", "echo ready; exec sleep 3600"})
				if err != nil {
					return nil, cleanup, err
				}
				holders = append(holders, h)
			}
			fl := peer("flock", "flock -w "+secs+" F true", func(path string) func(int) (float64, error) {
				return b.cpuOf(1, path, "-w", secs, lockFile, "true")
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

// cpuOf measures the CPU time of argv exiting with want, in ms: the run
// time the scheduler charged to its threads, read from schedstat while it
// runs (the last ≤ 50 ms before exit are not seen, for every tool alike).
func (b *bench) cpuOf(want int, argv ...string) func(int) (float64, error) {
	return func(int) (float64, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = b.env
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var last time.Duration
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if cpu, ok := schedstat.CPU(cmd.Process.Pid); ok {
				last = cpu
			}
			select {
			case <-done:
				if code := cmd.ProcessState.ExitCode(); code != want {
					return 0, fmt.Errorf("%s exited %d, want %d", strings.Join(argv, " "), code, want)
				}
				return ms(last), nil
			case <-tick.C:
			}
		}
	}
}
