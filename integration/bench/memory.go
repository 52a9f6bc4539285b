//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// memory: peak resident set of the supervising process while its child sleeps.
func init() {
	register(section{
		order: 60,
		name:  "memory",
		title: "peak RSS of the supervisor while it runs `sleep 1`",
		unit:  "MiB",
		note: "VmHWM of the supervising process, read from /proc until it exits; wait4's ru_maxrss is not used: " +
			"Linux carries the spawning process's RSS across exec into it",
		runs: func(b *bench) int { return b.memRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("memory")
			lockFile := filepath.Join(dir, "flock.lock")
			return []*tool{
				b.withlockTool("withlock run --dir D mem -- sleep 1", b.peakRSS(b.withlock, "run", "--dir", dir, "mem", "--", "sleep", "1")),
				peer("tini", "tini -s -- sleep 1", func(path string) func(int) (float64, error) {
					return b.peakRSS(path, "-s", "--", "sleep", "1")
				}),
				peer("flock", "flock F sleep 1", func(path string) func(int) (float64, error) {
					return b.peakRSS(path, lockFile, "sleep", "1")
				}),
			}, func() {}, nil
		},
	})
}

// rssPoll is how often VmHWM is read while the process runs.
const rssPoll = 10 * time.Millisecond

// peakRSS runs argv (which must exit 0) and returns the largest VmHWM read
// from /proc/<pid>/status while it ran, in MiB.
func (b *bench) peakRSS(argv ...string) func(int) (float64, error) {
	return func(int) (float64, error) {
		started := time.Now()
		p, stderr, err := b.spawn(argv, spawnOpts{})
		if err != nil {
			return 0, err
		}
		done := make(chan struct{})
		var peakKiB int64
		go func() {
			defer close(done)
			for {
				kib, ok := vmHWM(p.Pid)
				if !ok {
					return
				}
				peakKiB = max(peakKiB, kib)
				time.Sleep(rssPoll)
			}
		}()
		o, err := finish(p, stderr, started)
		<-done
		switch {
		case err != nil:
			return 0, err
		case o.status != 0:
			return 0, fmt.Errorf("exited %d: %s", o.status, o.stderr)
		case peakKiB == 0:
			return 0, fmt.Errorf("no VmHWM read for pid %d", p.Pid)
		}
		return float64(peakKiB) / 1024, nil
	}
}

// vmHWM reads the peak resident set (KiB) of pid; ok is false once the
// process is gone or a zombie (whose status has no memory lines).
func vmHWM(pid int) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:")); ok {
			kib, err := strconv.ParseInt(string(bytes.Fields(v)[0]), 10, 64)
			return kib, err == nil
		}
	}
	return 0, false
}
