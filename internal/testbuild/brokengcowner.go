//go:build withlock_broken_gcowner

package testbuild

func init() { CollectAnyOwner = true }
