//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/withlock/withlock/internal/schedstat"
)

// queued and drain: many waiters queued on one held lock — what each costs
// in memory while it waits, and how long they take to get through once the
// holder ends.
func init() {
	register(section{
		order: 55,
		name:  "queued",
		title: "private memory (USS) per queued waiter, waiters queued on one held lock",
		unit:  "MiB",
		note: "Private_Clean + Private_Dirty from /proc/<pid>/smaps_rollup of every waiter once all are blocked " +
			"(each quiet for two polls 100 ms apart: every thread sleeping, < 0.5 ms CPU), summed and divided by the waiters; pages of the " +
			"binary shared between the waiters are not counted",
		runs: func(b *bench) int { return b.memRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			n := b.queuedWaiters
			return queueTools(b, "q", []int{n}, true), func() {}, nil
		},
	})
	register(section{
		order: 56,
		name:  "drain",
		title: "waiters queued behind one holder: drain time after it ends (each waiter runs `true`)",
		unit:  "s",
		note: "from the holder's release (its child told to exit) until the last waiter has exited; the waiters are " +
			"all blocked before the release; withlock --wait 600s, flock -w 600, go-floor waits without a bound",
		runs: func(b *bench) int { return b.drainRounds },
		prepare: func(b *bench) ([]*tool, func(), error) {
			sizes := []int{b.drainWaiters}
			if small := b.drainWaiters / 4; small > 0 {
				sizes = append(sizes, small)
			}
			return queueTools(b, "d", sizes, false), func() {}, nil
		},
	})
}

// queueTool names the tool of a queue section for a size other than the
// first: "withlock (50)". The first size's tools are plain "withlock", …
func queueTool(name string, size int, first bool) string {
	if first {
		return name
	}
	return fmt.Sprintf("%s (%d)", name, size)
}

// queueTools returns withlock and flock tools for each size of queue, and
// go-floor for the first. Each run queues size waiters behind a holder,
// releases it once all are blocked and waits for every waiter; the sample
// is the USS per waiter read while they were queued (memory), else the
// drain time in seconds.
func queueTools(b *bench, id string, sizes []int, memory bool) []*tool {
	shape := func(n int) string { return fmt.Sprintf("%d waiters", n) }
	dir := b.dir("queue-" + id)
	var tools []*tool
	for i, n := range sizes {
		first := i == 0
		lockFile := filepath.Join(dir, fmt.Sprintf("flock-%d.lock", n))
		goFloorLock := filepath.Join(dir, fmt.Sprintf("gofloor-%d.lock", n))
		runID := fmt.Sprintf("%s%d", id, n)
		measure := func(holder, waiter []string) func(int) (float64, error) {
			return func(int) (float64, error) {
				uss, drain, err := b.runQueue(holder, waiter, n, memory)
				if memory {
					return uss, err
				}
				return drain.Seconds(), err
			}
		}
		wl := b.withlockTool(fmt.Sprintf("withlock run --wait 600s --dir D %s -- true, %s", runID, shape(n)),
			measure([]string{b.withlock, "run", "--dir", dir, runID, "--"},
				[]string{b.withlock, "run", "--dir", dir, "--wait", "600s", runID, "--", "/bin/true"}))
		wl.name, wl.subject = queueTool("withlock", n, first), true
		fl := peer("flock", "flock -w 600 F true, "+shape(n), func(path string) func(int) (float64, error) {
			return measure([]string{path, lockFile}, []string{path, "-w", "600", lockFile, "/bin/true"})
		})
		fl.name = queueTool("flock", n, first)
		tools = append(tools, wl, fl)
		if first {
			tools = append(tools, b.goFloorTool("gofloor F true, "+shape(n),
				measure([]string{b.goFloor, goFloorLock}, []string{b.goFloor, goFloorLock, "/bin/true"})))
		}
	}
	return tools
}

// runQueue starts holderPrefix + a shell that says ready and exits on a line
// from stdin, then n waiters (waiterArgv, which must exit 0), waits until
// every waiter is blocked, reads their USS per waiter (with memory),
// releases the holder and waits for all. drain is from the release until
// the last waiter exited.
func (b *bench) runQueue(holderPrefix, waiterArgv []string, n int, memory bool) (ussMiB float64, drain time.Duration, err error) {
	hIn, hInW, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer hInW.Close()
	hOut, hOutW, err := os.Pipe()
	if err != nil {
		hIn.Close()
		return 0, 0, err
	}
	defer hOut.Close()
	started := time.Now()
	hp, hErr, err := b.spawn(append(append([]string{}, holderPrefix...), "sh", "-c", "echo ready; read line; exit 0"),
		spawnOpts{stdin: hIn, stdout: hOutW})
	hIn.Close()
	hOutW.Close()
	if err != nil {
		return 0, 0, err
	}
	holderDone := make(chan outcome, 1)
	holderErr := make(chan error, 1)
	go func() {
		o, err := finish(hp, hErr, started)
		holderDone <- o
		holderErr <- err
	}()
	release := func() { hInW.Close() } // the shell's read sees EOF and it exits
	defer release()
	if line, err := bufio.NewReader(hOut).ReadString('\n'); err != nil || line != "ready\n" {
		release()
		o := <-holderDone
		return 0, 0, fmt.Errorf("holder not ready (%q, %v): exit %d: %s", line, err, o.status, o.stderr)
	}

	type ended struct {
		at  time.Time
		o   outcome
		err error
	}
	waiters := make(chan ended, n)
	var pids []int
	for range n {
		t := time.Now()
		p, stderr, err := b.spawn(waiterArgv, spawnOpts{})
		if err != nil {
			release()
			for range pids {
				<-waiters
			}
			return 0, 0, err
		}
		pids = append(pids, p.Pid)
		go func() {
			o, err := finish(p, stderr, t)
			waiters <- ended{time.Now(), o, err}
		}()
	}
	collect := func() (time.Time, error) {
		var last time.Time
		var first error
		for range n {
			e := <-waiters
			switch {
			case e.err != nil && first == nil:
				first = e.err
			case e.err == nil && e.o.status != 0 && first == nil:
				first = fmt.Errorf("a waiter exited %d: %s", e.o.status, e.o.stderr)
			}
			if e.at.After(last) {
				last = e.at
			}
		}
		return last, first
	}

	if err := waitBlocked(pids, 120*time.Second); err != nil {
		release()
		_, _ = collect()
		return 0, 0, err
	}
	if memory {
		if ussMiB, err = ussPerWaiterMiB(pids); err != nil {
			release()
			_, _ = collect()
			return 0, 0, err
		}
	}
	releasedAt := time.Now()
	release()
	last, werr := collect()
	ho, herr := <-holderDone, <-holderErr
	switch {
	case werr != nil:
		return 0, 0, werr
	case herr != nil:
		return 0, 0, herr
	case ho.status != 0:
		return 0, 0, fmt.Errorf("holder exited %d: %s", ho.status, ho.stderr)
	}
	return ussMiB, last.Sub(releasedAt), nil
}

// waitBlocked returns once every pid has been quiet for two polls in a
// row, 100 ms apart: all its threads sleeping and less than 0.5 ms of CPU
// used since the poll before. A process still starting up is not; one that
// has reached its wait is, though it may wake now and then to retry (so
// not every waiter is quiet at the same poll: each counts once it has been).
// It fails after timeout, or when a pid is gone (a waiter that gave up or
// failed).
func waitBlocked(pids []int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	prev := make([]time.Duration, len(pids))
	quiet := make([]int, len(pids))
	for first := true; ; first = false {
		done := 0
		for i, pid := range pids {
			cpu, ok := schedstat.CPU(pid)
			if !ok {
				return fmt.Errorf("waiter %d ended before the holder did", pid)
			}
			switch {
			case quiet[i] >= 2:
			case !first && cpu-prev[i] < 500*time.Microsecond && allSleeping(pid):
				quiet[i]++
			default:
				quiet[i] = 0
			}
			prev[i] = cpu
			if quiet[i] >= 2 {
				done++
			}
		}
		if done == len(pids) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d waiters not blocked after %v", len(pids)-done, len(pids), timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allSleeping reports whether every thread of pid is in state S
// (interruptible sleep), as a process blocked in flock(2), futex(2) or
// epoll_wait(2) is. A zombie or a running thread is not.
func allSleeping(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/stat")
		if err != nil {
			return false
		}
		// pid (comm) S …: comm may hold spaces and parentheses; the state
		// follows the last ')'.
		i := bytes.LastIndexByte(data, ')')
		if i < 0 || i+2 >= len(data) || data[i+2] != 'S' {
			return false
		}
	}
	return true
}

// ussPerWaiterMiB is the waiters' summed USS divided by their number.
func ussPerWaiterMiB(pids []int) (float64, error) {
	var sum int64
	for _, pid := range pids {
		kib, err := ussKiB(pid)
		if err != nil {
			return 0, err
		}
		sum += kib
	}
	return float64(sum) / 1024 / float64(len(pids)), nil
}

// ussKiB is pid's unique set size: the private pages of its mappings,
// clean and dirty, from /proc/<pid>/smaps_rollup.
func ussKiB(pid int) (int64, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/smaps_rollup"
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("uss: %w", err)
	}
	var kib int64
	found := 0
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "Private_Clean" && k != "Private_Dirty") {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			return 0, fmt.Errorf("uss: %s: malformed %q", path, line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("uss: %s: %w", path, err)
		}
		kib += n
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("uss: %s: no Private_Clean/Private_Dirty lines", path)
	}
	return kib, nil
}
