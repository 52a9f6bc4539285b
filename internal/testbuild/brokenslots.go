//go:build withlock_broken_slots

package testbuild

func init() { BrokenSlots = true }
