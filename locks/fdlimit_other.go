//go:build !linux

package locks

import "errors"

// ErrFewDescriptors: see fdlimit_linux.go.
var ErrFewDescriptors = errors.New("too few file descriptors")

// ReserveDescriptors checks nothing where withlock does not run.
func ReserveDescriptors() error { return nil }

// CheckDescriptors checks nothing where withlock does not run.
func CheckDescriptors() error { return nil }

// FreeReserve does nothing where nothing was reserved.
func FreeReserve() {}
