//go:build !linux

// The bench measures Linux processes (fork+exec timing, /proc, flock(1),
// tini); elsewhere it only says so.
package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stderr, "bench: unsupported on %s: withlock and its benchmark are Linux-only\n", runtime.GOOS)
	os.Exit(2)
}
