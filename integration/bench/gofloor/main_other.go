//go:build !linux

// Command gofloor is the bench's Linux-only go-floor peer (see main.go).
package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stderr, "gofloor: unsupported on %s\n", runtime.GOOS)
	os.Exit(2)
}
