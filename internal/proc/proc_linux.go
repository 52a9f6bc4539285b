package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/failpoint"
)

// root is where /proc is mounted; naming it keeps the paths in one place.
const root = "/proc"

// Read reads /proc/<pid>/stat. A pid that does not exist is an error
// matching fs.ErrNotExist.
func Read(pid int) (Process, error) {
	path := root + "/" + strconv.Itoa(pid) + "/stat"
	// stat is one short line, produced whole by one read. O_NONBLOCK
	// changes nothing for it (a /proc file's read never blocks); with it
	// os.OpenFile does not set and clear the flag around its poller check,
	// four fcntl calls per process on every scan of a tree.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return Process{}, err
	}
	var buf [1024]byte
	n, err := f.Read(buf[:])
	f.Close()
	if err != nil {
		// A process that exits between open and read reads as ESRCH.
		if errors.Is(err, syscall.ESRCH) {
			err = fs.ErrNotExist
		}
		return Process{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return parseStat(pid, path, buf[:n])
}

// parseStat parses "pid (comm) state ppid pgrp … starttime …". comm may
// hold spaces and parentheses, so fields are counted after its last ')'.
func parseStat(pid int, path string, b []byte) (Process, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Process{}, fmt.Errorf("parse %s: no ')' in %q", path, b)
	}
	// After ") ": field 3 (state) is rest[0], ppid rest[1], pgrp rest[2],
	// starttime (field 22) rest[19].
	rest := strings.Fields(string(b[i+1:]))
	if len(rest) < 20 || len(rest[0]) != 1 {
		return Process{}, fmt.Errorf("parse %s: %d fields after comm, want 20 or more", path, len(rest))
	}
	ppid, err1 := strconv.Atoi(rest[1])
	pgrp, err2 := strconv.Atoi(rest[2])
	start, err3 := strconv.ParseUint(rest[19], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return Process{}, fmt.Errorf("parse %s: %w", path, err)
	}
	return Process{Pid: pid, PPid: ppid, Pgrp: pgrp, State: rest[0][0], StartTime: start}, nil
}

// StartTime returns field 22 of /proc/<pid>/stat: the start time in clock
// ticks since boot.
func StartTime(pid int) (uint64, error) {
	p, err := Read(pid)
	return p.StartTime, err
}

// Live judges pid: a pid that is not there is dead; a zombie is dead (it
// will never renew or release anything, and its pid cannot be reused before
// it is reaped); a different start time (when start is known) means the pid
// was reused. When /proc does not show the pid (hidepid may hide other
// users' processes), kill(pid, 0) decides: ESRCH is dead, EPERM is alive.
func Live(pid int, start uint64) Liveness {
	if pid <= 0 {
		return Dead
	}
	p, err := Read(pid)
	switch {
	case err != nil:
		if errors.Is(unix.Kill(pid, 0), syscall.ESRCH) {
			return Dead
		}
		return Alive // cannot tell: never reclaim on a guess
	case p.State == 'Z' || p.State == 'X':
		return Dead
	case start != 0 && p.StartTime != start:
		return Reused
	}
	return Alive
}

// Signal sends sig to pid unless it is gone or, start being set (clock
// ticks since boot), its pid now names a process that started at another
// time. A process that is gone, or reused, is not signalled and is not an
// error.
//
// The check is race-free where pidfds exist (Linux 5.3+): the pidfd is
// opened first, then the start time is compared, so the signal goes to the
// very process that was checked even if its pid is reused right after.
// Without pidfds the start-time check narrows the reuse window to a few
// microseconds instead of closing it.
func Signal(pid int, start uint64, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err == nil {
		defer unix.Close(fd)
	}
	now, rerr := Read(pid)
	switch {
	case errors.Is(rerr, fs.ErrNotExist) || (rerr == nil && start != 0 && now.StartTime != start):
		return nil
	case rerr != nil:
		return rerr
	case err == nil:
		err = unix.PidfdSendSignal(fd, sig, nil, 0)
	default:
		err = unix.Kill(pid, sig) // no pidfd support: best effort
	}
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// BootID is this boot's random id (/proc/sys/kernel/random/boot_id).
func BootID() (string, error) {
	b, err := os.ReadFile(root + "/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// PidNamespace is the inode of /proc/self/ns/pid: the pid namespace of the
// calling process.
func PidNamespace() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(root+"/self/ns/pid", &st); err != nil {
		return 0, &fs.PathError{Op: "stat", Path: root + "/self/ns/pid", Err: err}
	}
	return st.Ino, nil
}

// All reads /proc/<pid>/stat of every process once. Processes that vanish
// or cannot be read during the walk are left out.
func All() ([]Process, error) {
	pids, err := pids()
	if err != nil {
		return nil, err
	}
	out := make([]Process, 0, len(pids))
	for _, pid := range pids {
		if p, err := Read(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

func pids() ([]int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(entries))
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Descendants returns every process below pid (children, their children,
// …), zombies included: they are still somebody's to reap. Processes that
// appear or vanish during the walk may be missed or reported; callers that
// must see none left call it again. One pass over /proc is exact where
// /proc/<pid>/task/<tid>/children would need CONFIG_PROC_CHILDREN.
func Descendants(pid int) ([]Process, error) {
	if pid == os.Getpid() {
		// Every process below a subreaper has a chain of parents ending in
		// one of its children, so with no child at all there is nothing
		// below: one waitid instead of a pass over all of /proc.
		if !hasChildren() {
			return nil, nil
		}
	}
	all, err := All()
	if err != nil {
		return nil, err
	}
	children := make(map[int][]Process)
	for _, p := range all {
		children[p.PPid] = append(children[p.PPid], p)
	}
	var out []Process
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, p := range children[parent] {
			if !seen[p.Pid] {
				seen[p.Pid] = true
				out = append(out, p)
				queue = append(queue, p.Pid)
			}
		}
	}
	return out, nil
}

// Holding returns the pids of the processes that have file id open, found
// by matching each /proc/<pid>/fd/* against it. Processes whose fd
// directory cannot be read (another user's, without privilege) are left
// out; if not even one process's could be read, the error says so.
func Holding(id FileID) ([]int, error) {
	pids, err := pids()
	if err != nil {
		return nil, err
	}
	var out []int
	readable := false
	for _, pid := range pids {
		dir := root + "/" + strconv.Itoa(pid) + "/fd"
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		readable = true
		for _, e := range entries {
			var st unix.Stat_t
			if unix.Stat(dir+"/"+e.Name(), &st) == nil && st.Ino == id.Ino && uint64(st.Dev) == id.Dev {
				out = append(out, pid)
				break
			}
		}
	}
	if !readable {
		return nil, fmt.Errorf("read %s/*/fd: no process's descriptors could be read", root)
	}
	return out, nil
}

// hasChildren reports whether the calling process has any child, live or
// zombie: waitid(P_ALL, WNOHANG|WNOWAIT) fails with ECHILD only when there
// is none, and it reaps nothing. Any other failure counts as a child (the
// caller then looks at /proc).
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT, nil)
	return !errors.Is(err, unix.ECHILD)
}

// View says how the mounted /proc sees this process. /proc shows the pids
// of the pid namespace it was mounted in, not necessarily ours: after
// `unshare --pid --fork` without `--mount-proc`, os.Getpid() is a pid of
// the new namespace (1, 2, …) while /proc/<pid> names processes of the
// outer one. ours is true when /proc/self is our own pid, so that pids of
// our namespace can be judged by /proc; procPid is the pid /proc knows us
// by (0 when it does not show us at all: a /proc of a namespace we are not
// in). The kernel resolves /proc/self through the mount's namespace, so a
// mismatch is exact: it cannot happen with a /proc of our own namespace.
func View() (procPid int, ours bool) {
	var buf [24]byte
	n, err := unix.Readlink(root+"/self", buf[:])
	if err != nil || n == 0 || n == len(buf) {
		return 0, false
	}
	pid, err := strconv.Atoi(string(buf[:n]))
	if err != nil {
		return 0, false
	}
	return pid, pid == os.Getpid() || failpoint.On(failpoint.TrustForeignProc)
}
