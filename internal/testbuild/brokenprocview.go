//go:build withlock_broken_procview

package testbuild

func init() { TrustForeignProc = true }
