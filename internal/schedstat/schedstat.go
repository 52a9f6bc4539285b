// Package schedstat reads how much CPU the scheduler charged a process:
// the sum over its threads of /proc/<pid>/task/<tid>/schedstat's first
// field (run time in ns). Unlike rusage, which on a tick-accounted kernel
// bills a briefly woken process whole ticks at random, it is exact; the
// scorecard and the bench use it for a waiter's CPU.
package schedstat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU sums the run time of every thread of pid; false once pid is gone or
// exiting (its threads' files listed but no longer readable: a sum of 0 then
// would read as its CPU going backwards).
func CPU(pid int) (time.Duration, bool) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	read := 0
	for _, path := range tasks {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // a thread that just ended
		}
		fields := strings.Fields(string(data))
		if len(fields) == 0 {
			continue
		}
		read++
		ns, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, read > 0
}
