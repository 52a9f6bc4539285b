//go:build !unix

package supervisor

import "os"

// AbortsWait reports whether sig, received while waiting for the lock, ends
// the wait: the interrupt, the one signal this platform delivers.
func AbortsWait(sig os.Signal) bool { return sig == os.Interrupt }
