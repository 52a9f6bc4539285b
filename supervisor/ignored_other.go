//go:build !linux

package supervisor

import "os"

// ignoredByKernel is Linux-only; elsewhere os/signal's answer stands.
func ignoredByKernel(os.Signal) bool { return false }
