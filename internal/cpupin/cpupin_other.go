//go:build !linux

// Package cpupin keeps withlock's own threads on one CPU; withlock runs on
// Linux only, and elsewhere it does nothing.
package cpupin

// Start does nothing off Linux, and says so.
func Start() bool { return false }

// Unpinned runs f.
func Unpinned(f func()) { f() }
