package locks

import (
	"bytes"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// scopeProcessAlive judges a registry holder. /proc/<pid>/stat says
// whether the pid exists, whether it is a zombie (dead: it will never
// release, and its pid cannot be reused before it is reaped) and, when
// start is known, whether it is the process that registered (field 22,
// start time in clock ticks since boot; a difference means the pid was
// reused). When /proc does not show the pid (hidepid may hide other users'
// processes), kill(pid, 0) decides: ESRCH dead, EPERM alive.
//
// It does what ProcessLiveness does, and also spots zombies, with raw
// system calls into a stack buffer and kill(2) only when needed: a start
// sweeps every allocation of the registry, a thousand of them within the
// few milliseconds a start may take. (To be unified with ProcessLiveness.)
func scopeProcessAlive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	state, started, err := scopeProcStat(pid)
	switch {
	case err != nil: // not shown, or not readable: kill tells what it can
		return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
	case state == 'Z' || state == 'X':
		return false
	}
	return start == 0 || started == start
}

// scopeProcStat reads the state (field 3) and start time (field 22) of pid.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted after its last closing parenthesis.
func scopeProcStat(pid int) (state byte, start uint64, err error) {
	var pathBuf [32]byte
	path := strconv.AppendInt(append(pathBuf[:0], "/proc/"...), int64(pid), 10)
	fd, err := unix.Open(string(append(path, "/stat"...)), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	var buf [1024]byte
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return 0, 0, err
	}
	data := buf[:n]
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+3 >= len(data) {
		return 0, 0, errors.New("malformed /proc stat")
	}
	fields := data[i+2:] // "S ppid pgrp ..."
	state = fields[0]
	for field := 3; field < 22; field++ {
		j := bytes.IndexByte(fields, ' ')
		if j < 0 {
			return 0, 0, errors.New("malformed /proc stat")
		}
		fields = fields[j+1:]
	}
	if j := bytes.IndexByte(fields, ' '); j >= 0 {
		fields = fields[:j]
	}
	start, err = strconv.ParseUint(string(fields), 10, 64)
	return state, start, err
}
