//go:build !linux

package earlysig

// maskClear: withlock supervises on Linux only; elsewhere nothing starts early.
func maskClear() bool { return false }
