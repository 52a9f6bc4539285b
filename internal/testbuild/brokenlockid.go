//go:build withlock_broken_lockid

package testbuild

func init() { SkipLockIDCheck = true }
