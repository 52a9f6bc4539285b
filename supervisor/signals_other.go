//go:build !unix

package supervisor

import "os"

// Without Unix signals withlock does not supervise (Run reports the
// platform unsupported); the interrupt is kept so a wait can be aborted.
var (
	caught       = []os.Signal{os.Interrupt}
	childChanged []os.Signal
)

// AbortsWait reports whether sig, received while waiting for the lock, ends
// the wait: the interrupt, the one signal this platform delivers.
func AbortsWait(sig os.Signal) bool { return sig == os.Interrupt }

// StopsJob is false: there is no job control here.
func StopsJob(sig os.Signal) bool { return false }

// raise does nothing: there is no exec backend to hand signals to here.
func raise(os.Signal) {}
