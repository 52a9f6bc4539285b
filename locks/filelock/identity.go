package filelock

import (
	"fmt"
	"os"

	"github.com/withlock/withlock/internal/proc"
)

// Identity is what makes a pid meaningful: the machine, the boot, the pid
// namespace, and the process start time that defeats pid reuse.
type Identity struct {
	Host     string
	BootID   string
	PidNS    uint64
	Pid      int
	PidStart uint64
	// ForeignProc: the mounted /proc belongs to another pid namespace
	// (proc.View), so no pid can be judged by it: every holder is judged
	// by its TTL alone, as one on another host is (SPEC §3).
	ForeignProc bool
}

// SelfIdentity describes the calling process.
func SelfIdentity() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("hostname: %w", err)
	}
	boot, err := proc.BootID()
	if err != nil {
		return Identity{}, fmt.Errorf("boot id: %w", err)
	}
	// A /proc of another pid namespace (proc.View) does not know our pid,
	// and no run fails for that; /proc/self still leads to our own entry
	// (our pid namespace, our start time) when it shows us at all.
	procPid, ours := proc.View()
	self := Identity{Host: host, BootID: boot, Pid: os.Getpid(), ForeignProc: !ours}
	if procPid <= 0 {
		return self, nil
	}
	self.PidNS, err = proc.PidNamespace()
	if err == nil {
		self.PidStart, err = proc.StartTime(procPid)
	}
	if err != nil && ours {
		return Identity{}, fmt.Errorf("pid namespace and start time: %w", err)
	}
	return self, nil
}
