//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// signalHolder is Linux-only: the holder's identity is checked in /proc.
func signalHolder(pid int, start uint64, sig syscall.Signal) error { return errors.ErrUnsupported }
