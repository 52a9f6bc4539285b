package locks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Identity is what makes a pid meaningful: the machine, the boot, the pid
// namespace, and the process start time that defeats pid reuse.
type Identity struct {
	Host     string
	BootID   string
	PidNS    uint64
	Pid      int
	PidStart uint64
}

// SelfIdentity describes the calling process.
func SelfIdentity() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("hostname: %w", err)
	}
	boot, _, err := OSFS{}.ReadLockFile("/proc/sys/kernel/random/boot_id", 64)
	if err != nil {
		return Identity{}, err
	}
	ns, err := pidNamespace()
	if err != nil {
		return Identity{}, err
	}
	start, err := ProcessStartTime(os.Getpid())
	if err != nil {
		return Identity{}, err
	}
	return Identity{
		Host:     host,
		BootID:   strings.TrimSpace(string(boot)),
		PidNS:    ns,
		Pid:      os.Getpid(),
		PidStart: start,
	}, nil
}

func pidNamespace() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: "/proc/self/ns/pid", Err: err}
	}
	return st.Ino, nil
}

// ProcessStartTime returns field 22 of /proc/<pid>/stat: the start time in
// clock ticks since boot. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its closing parenthesis.
func ProcessStartTime(pid int) (uint64, error) {
	_, start, err := procStat(pid)
	return start, err
}

// Liveness is what can be said about a pid on this host.
type Liveness int

const (
	Alive Liveness = iota
	Dead
	Reused // a process has the pid but started at another time
)

func (l Liveness) String() string {
	switch l {
	case Alive:
		return "alive"
	case Dead:
		return "dead"
	default:
		return "pid reused"
	}
}

// ProcessLiveness judges pid from /proc/<pid>/stat: a pid that is not
// there is dead; a zombie is dead (it will never renew or release anything,
// and its pid cannot be reused before it is reaped); a different start time
// (when start is known) means the pid was reused. When /proc does not show
// the pid (hidepid may hide other users' processes), kill(pid, 0) decides:
// ESRCH is dead, EPERM is alive. The scope registry checks a thousand
// holders on one start, so this reads with raw system calls into a stack
// buffer and calls kill(2) only when needed.
func ProcessLiveness(pid int, start uint64) Liveness {
	if pid <= 0 {
		return Dead
	}
	state, got, err := procStat(pid)
	switch {
	case err != nil:
		if errors.Is(unix.Kill(pid, 0), syscall.ESRCH) {
			return Dead
		}
		return Alive // cannot tell: never reclaim on a guess
	case state == 'Z' || state == 'X':
		return Dead
	case start != 0 && got != start:
		return Reused
	}
	return Alive
}

// procStat reads the state (field 3) and start time (field 22) of pid.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted after its last closing parenthesis. The scope registry calls this
// once per holder, a thousand times on one start: the path is built on the
// stack and the fields are found in one pass.
func procStat(pid int) (state byte, start uint64, err error) {
	var pathBuf [32]byte
	path := strconv.AppendInt(append(pathBuf[:0], "/proc/"...), int64(pid), 10)
	path = append(path, "/stat"...)
	fd, err := unix.Open(string(path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, &os.PathError{Op: "open", Path: string(path), Err: err}
	}
	var buf [1024]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return 0, 0, &os.PathError{Op: "read", Path: string(path), Err: err}
	}
	data := buf[:n]
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+3 >= len(data) {
		return 0, 0, fmt.Errorf("parse %s: no command field", string(path))
	}
	fields := data[i+2:] // "S ppid pgrp ..."
	state = fields[0]
	// Field 22 starts after the 19th space from field 3.
	j, spaces := 0, 0
	for ; j < len(fields) && spaces < 22-3; j++ {
		if fields[j] == ' ' {
			spaces++
		}
	}
	if spaces < 22-3 {
		return 0, 0, fmt.Errorf("parse %s: too few fields", string(path))
	}
	end := j
	for end < len(fields) && fields[end] != ' ' {
		end++
	}
	start, err = strconv.ParseUint(string(fields[j:end]), 10, 64)
	return state, start, err
}
