//go:build !linux

package reaper

import (
	"syscall"
)

// WaitStatus is the wait status of a reaped child.
type WaitStatus = syscall.WaitStatus

// SetSubreaper is unsupported here.
func SetSubreaper(on bool) error { return ErrUnsupported }

// IsSubreaper is unsupported here.
func IsSubreaper() (bool, error) { return false, ErrUnsupported }

// Reap is unsupported here.
func Reap() ([]Exit, error) { return nil, ErrUnsupported }

// Descendants is unsupported here.
func Descendants(pid int) ([]Process, error) { return nil, ErrUnsupported }

// ReadProcess is unsupported here.
func ReadProcess(pid int) (Process, error) { return Process{}, ErrUnsupported }

// Signal is unsupported here.
func Signal(p Process, sig syscall.Signal) error { return ErrUnsupported }

// SignalAll is unsupported here.
func SignalAll(ps []Process, sig syscall.Signal) error { return ErrUnsupported }

// StopSignal is unsupported here.
func StopSignal(pid int) (syscall.Signal, bool, error) { return 0, false, ErrUnsupported }

// State is unsupported here: it reports every process gone.
func State(p Process) byte { return 0 }
