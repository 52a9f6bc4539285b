//go:build !linux

package locks

import "errors"

// Identity is what makes a pid meaningful; see proc_linux.go.
type Identity struct {
	Host     string
	BootID   string
	PidNS    uint64
	Pid      int
	PidStart uint64
}

// SelfIdentity is Linux-only.
func SelfIdentity() (Identity, error) { return Identity{}, errors.ErrUnsupported }

// ProcessStartTime is Linux-only.
func ProcessStartTime(pid int) (uint64, error) { return 0, errors.ErrUnsupported }

// Liveness is what can be said about a pid on this host.
type Liveness int

const (
	Alive Liveness = iota
	Dead
	Reused
)

// ProcessLiveness is Linux-only; it answers Alive so nothing is reclaimed.
func ProcessLiveness(pid int, start uint64) Liveness { return Alive }
