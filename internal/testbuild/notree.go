//go:build withlock_notree

package testbuild

func init() { NoTree = true }
