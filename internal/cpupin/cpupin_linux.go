// Package cpupin keeps withlock's own threads on one CPU for its whole run,
// while the child it supervises gets the CPUs withlock was started with.
//
// A Go program hands work between its threads all the time: every signal
// subscription is a round trip to the runtime's signal thread, every
// blocking call hands the scheduler's P to another thread, and so on. On a
// small VM a wake-up that crosses to an idle vCPU costs an inter-processor
// interrupt and a VM exit, 30–70 µs; a wake-up on the same CPU is a context
// switch of a few µs. withlock's start-up is a chain of such hand-offs, so
// keeping its threads together takes a large part off its overhead; its own
// work is small, so the CPU it gives up is nothing a run misses.
//
// Start also widens the timer slack of the runtime's monitor thread (see
// slowSysmon), where the process may (CAP_SYS_NICE).
package cpupin

import (
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

var (
	mu       sync.Mutex
	original unix.CPUSet // the CPUs withlock was started with
	pinned   bool
	onto     unix.CPUSet // the one CPU withlock's threads run on
	// startSlack is the timer slack withlock started with (its parent's,
	// in ns); 0 when it could not be read. A child gets it back (Unpinned).
	startSlack int
)

// sysmonSlack is the timer slack slowSysmon gives sysmon, in ns.
const sysmonSlack = 1_000_000

// Start pins every thread of the process to the CPU the caller runs on and
// reports whether it did (or had). It does nothing when the process may use
// one CPU only, or when the CPU cannot be told. Threads the runtime creates
// later inherit the pin from the thread that creates them.
func Start() bool {
	mu.Lock()
	defer mu.Unlock()
	if pinned {
		return true
	}
	if err := unix.SchedGetaffinity(0, &original); err != nil || original.Count() < 2 {
		return false
	}
	var cpu, node uint32
	if _, _, errno := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); errno != 0 || !original.IsSet(int(cpu)) {
		return false
	}
	onto.Zero()
	onto.Set(int(cpu))
	pinned = true
	slowSysmon(pinAll())
	// One CPU, one P: with two, the scheduler would wake a second thread
	// to look for work whenever a goroutine becomes runnable, only to
	// have it wait for the same CPU. (withlock has set 1 already, at the
	// start of its package inits, where it costs less: cmd/withlock/internal/oneproc.)
	runtime.GOMAXPROCS(1)
	return true
}

// pinAll sets the affinity of every thread listed in /proc/self/task. A
// thread created during the pass by a thread not yet pinned escapes it, so
// the pass is repeated until it finds nothing new. It returns the first
// listing.
func pinAll() (first []int) {
	done := map[int]bool{}
	for range 4 {
		tids, err := threads()
		if err != nil {
			return first
		}
		if first == nil {
			first = tids
		}
		fresh := 0
		for _, tid := range tids {
			if !done[tid] {
				done[tid] = true
				fresh++
				_ = unix.SchedSetaffinity(tid, &onto)
			}
		}
		if fresh == 0 {
			return first
		}
	}
	return first
}

// slowSysmon gives the runtime's monitor thread, sysmon, a timer slack of
// 1 ms. sysmon wakes every 20 µs until it has found nothing to do for 1 ms,
// and every P it takes back from a system call starts that over, so in a
// run of a few milliseconds it wakes all the time: each wake-up a timer, a
// VM exit and two context switches on withlock's one CPU, ~0.4 ms of CPU a
// run here (per-thread schedstat). With the slack its sleeps last up to
// 1 ms: 0.16–0.29 ms less CPU per run, 0.22–0.53 ms less per critical
// section under 8 × 25 contention (interleaved drivers; README, Performance). What it costs: a P held by
// a goroutine blocked in a system call is taken back up to 1 ms later, so a
// signal or timer that arrives meanwhile waits that much longer.
//
// sysmon is the first thread the runtime clones (runtime.main, before any
// package initialises), so it has the lowest thread id above the process
// id; a wrong guess only gives some other thread the slack. Threads sysmon
// clones later inherit the slack, and a child forked by one of them would
// too: Unpinned gives the forking thread the slack withlock started with.
// Setting another thread's slack needs CAP_SYS_NICE; without it nothing
// changes.
func slowSysmon(tids []int) {
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || slack <= 0 {
		return
	}
	startSlack = slack
	pid, sysmon := unix.Getpid(), 0
	for _, tid := range tids {
		if tid > pid && (sysmon == 0 || tid < sysmon) {
			sysmon = tid
		}
	}
	if sysmon == 0 {
		return
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(sysmon)+"/timerslack_ns", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	_, _ = unix.Write(fd, []byte(strconv.Itoa(sysmonSlack)))
	unix.Close(fd)
}

// threads lists /proc/self/task with plain system calls: os.Open would
// try to register the directory with Go's poller, and that first
// registration sets the poller up (epoll_create, eventfd, epoll_ctl), work
// a run that never waits does not otherwise need.
func threads() ([]int, error) {
	fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// Unpinned runs f on the calling thread with the CPUs withlock was started
// with, and pins the thread again afterwards. The caller must have locked its
// goroutine to its thread. A child forked inside f inherits those CPUs, and
// the timer slack withlock started with.
func Unpinned(f func()) {
	mu.Lock()
	p, slack := pinned, startSlack
	mu.Unlock()
	if !p {
		f()
		return
	}
	_ = unix.SchedSetaffinity(0, &original)
	defer unix.SchedSetaffinity(0, &onto)
	if slack > 0 { // this thread may be one sysmon cloned (slowSysmon)
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0)
	}
	f()
}
