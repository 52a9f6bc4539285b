//go:build !linux

package main

import "syscall"

// dieOf is Linux-only (supervision is); main exits with 128+N instead.
func dieOf(sig syscall.Signal) {}
