package scope

import (
	"errors"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// pidPresent is the seed's stale check (stale 検出: kill(pid, 0)): false only
// when no process has the pid (ESRCH); EPERM is a process of another user.
// One system call, no /proc read: it cannot tell a zombie or a reused pid
// from its holder, which processAlive can.
func pidPresent(pid int) bool {
	return pid > 0 && !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}

// listPresentAt is how many holders a start must check before one listing
// of /proc is cheaper than a kill(pid, 0) for each: a listing costs a
// system call per few hundred processes on the machine, a kill one per
// holder (about a microsecond each on a VM).
const listPresentAt = 256

// presentPIDs is a start's answer to "does this pid run" for many holders
// at once (issue 18: 10,000 holders are 10,000 system calls): the pids
// /proc listed a moment ago count as present; any other pid gets the
// seed's kill(pid, 0), so a holder is only ever reclaimed on ESRCH. (A
// listing shows processes, not threads: a thread id a foreign writer put
// in the registry is not listed, and kill answers for it.) It is nil when
// /proc cannot be listed or is not this pid namespace's: then every pid
// gets kill.
type presentPIDs []int // sorted

func listPresent() presentPIDs {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return nil // no /proc, or another pid namespace's
	}
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(fd)
	pids := make(presentPIDs, 0, 1024)
	buf := make([]byte, 16<<10) // a few hundred processes a call; more is fresh memory (page faults)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil
		}
		if n <= 0 {
			break
		}
		pids = appendDirentPIDs(pids, buf[:n])
	}
	if !slices.IsSorted(pids) {
		slices.Sort(pids)
	}
	return pids
}

// appendDirentPIDs appends the names of linux_dirent64 records that are
// all digits (a process's directory in /proc).
func appendDirentPIDs(pids presentPIDs, buf []byte) presentPIDs {
	const nameAt = 19 // ino (8), off (8), reclen (2), type (1)
	for len(buf) >= nameAt {
		reclen := int(buf[16]) | int(buf[17])<<8
		if reclen < nameAt || reclen > len(buf) {
			break
		}
		pid := 0
		name := buf[nameAt:reclen]
		k := 0
		for ; k < len(name) && '0' <= name[k] && name[k] <= '9' && pid < 1<<31; k++ {
			pid = pid*10 + int(name[k]-'0')
		}
		if k > 0 && (k == len(name) || name[k] == 0) && pid > 0 {
			pids = append(pids, pid)
		}
		buf = buf[reclen:]
	}
	return pids
}

// present reports whether pid runs: listed, or kill(pid, 0) says so.
func (p presentPIDs) present(pid int) bool {
	if pid <= 0 {
		return false
	}
	if _, listed := slices.BinarySearch(p, pid); listed {
		return true
	}
	return pidPresent(pid)
}
