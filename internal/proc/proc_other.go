//go:build !linux

package proc

import "errors"

// Read is Linux-only.
func Read(pid int) (Process, error) { return Process{}, errors.ErrUnsupported }

// StartTime is Linux-only.
func StartTime(pid int) (uint64, error) { return 0, errors.ErrUnsupported }

// Live is Linux-only; it answers Alive so nothing is reclaimed on a guess.
func Live(pid int, start uint64) Liveness { return Alive }

// BootID is Linux-only.
func BootID() (string, error) { return "", errors.ErrUnsupported }

// PidNamespace is Linux-only.
func PidNamespace() (uint64, error) { return 0, errors.ErrUnsupported }

// All is Linux-only.
func All() ([]Process, error) { return nil, errors.ErrUnsupported }

// Descendants is Linux-only.
func Descendants(pid int) ([]Process, error) { return nil, errors.ErrUnsupported }

// GroupMembers is Linux-only.
func GroupMembers(pgid int) ([]Process, error) { return nil, errors.ErrUnsupported }

// Holding is Linux-only.
func Holding(id FileID) ([]int, error) { return nil, errors.ErrUnsupported }
