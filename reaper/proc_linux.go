package reaper

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procRoot is where /proc is mounted; tests never change it, but naming it
// keeps the paths in one place.
const procRoot = "/proc"

// Descendants returns every live process below pid (children, their
// children, …), found through /proc. Zombies are included: they are still
// somebody's to reap. Processes that appear or vanish during the walk may be
// missed or reported; callers that must see none left call it again.
func Descendants(pid int) ([]Process, error) {
	if pid == os.Getpid() {
		// Every process below us has a chain of parents ending in one of
		// our children (orphans are reparented to us, the subreaper), so
		// with no child at all there is nothing below: one waitid instead
		// of a pass over all of /proc, on the path every run takes.
		if has, err := hasChildren(); err == nil && !has {
			return nil, nil
		}
	}
	children, err := childrenIndex()
	if err != nil {
		return nil, err
	}
	var out []Process
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, p := range children[parent] {
			if seen[p.Pid] {
				continue
			}
			seen[p.Pid] = true
			out = append(out, p)
			queue = append(queue, p.Pid)
		}
	}
	return out, nil
}

// childrenIndex reads /proc/<pid>/stat of every process once and groups the
// processes by parent. One pass over /proc costs a few milliseconds even on
// a busy machine, and is exact where /proc/<pid>/task/<tid>/children would
// need CONFIG_PROC_CHILDREN.
func childrenIndex() (map[int][]Process, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", procRoot, err)
	}
	index := make(map[int][]Process)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := ReadProcess(pid)
		if err != nil {
			continue // gone since ReadDir, or not ours to read
		}
		index[p.PPid] = append(index[p.PPid], p)
	}
	return index, nil
}

// ReadProcess reads pid, parent pid and start time from /proc/<pid>/stat.
func ReadProcess(pid int) (Process, error) {
	path := procRoot + "/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Process{}, fmt.Errorf("%s: %w", path, ErrGone)
	}
	if err != nil {
		return Process{}, err // already a *fs.PathError naming the path
	}
	return parseStat(pid, b)
}

// parseStat parses "pid (comm) state ppid … starttime …". comm may hold
// spaces and parentheses, so fields are counted after its last ')'.
func parseStat(pid int, b []byte) (Process, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Process{}, fmt.Errorf("stat of %d: no ')' in %q", pid, b)
	}
	// After ") ": field 3 (state) is rest[0], ppid is rest[1], starttime
	// (field 22) is rest[19].
	rest := strings.Fields(string(b[i+1:]))
	if len(rest) < 20 {
		return Process{}, fmt.Errorf("stat of %d: %d fields after comm, want 20 or more", pid, len(rest))
	}
	ppid, err := strconv.Atoi(rest[1])
	if err != nil {
		return Process{}, fmt.Errorf("stat of %d: ppid: %w", pid, err)
	}
	start, err := strconv.ParseUint(rest[19], 10, 64)
	if err != nil {
		return Process{}, fmt.Errorf("stat of %d: starttime: %w", pid, err)
	}
	return Process{Pid: pid, PPid: ppid, StartTime: start}, nil
}

// hasChildren reports whether the calling process has any child, live or
// zombie: waitid(P_ALL, WNOHANG|WNOWAIT) fails with ECHILD only when there
// is none, and it reaps nothing.
func hasChildren() (bool, error) {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}
