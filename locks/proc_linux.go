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
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
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

// procStat returns the state letter (field 3) and start time (field 22).
func procStat(pid int) (byte, uint64, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("parse %s: no command field", path)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, fmt.Errorf("parse %s: %d fields", path, len(fields))
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	return fields[0][0], start, err
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

// ProcessLiveness checks pid with kill(pid, 0): ESRCH is dead, EPERM is alive
// (the process exists but belongs to someone else). A zombie is dead: it
// will never renew anything. When start is non-zero and the process' start
// time differs, the pid was reused.
func ProcessLiveness(pid int, start uint64) Liveness {
	if pid <= 0 {
		return Dead
	}
	err := unix.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return Dead
	}
	state, got, err := procStat(pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Dead
	case err != nil:
		return Alive // cannot tell: never reclaim on a guess
	case state == 'Z' || state == 'X':
		return Dead
	case start != 0 && got != start:
		return Reused
	}
	return Alive
}
