//go:build !unix

package sigsub

import "os"

// Without Unix signals withlock does not supervise (supervisor.Run reports
// the platform unsupported); the interrupt is kept so a wait can be aborted.
var (
	forwarded   = []os.Signal{os.Interrupt}
	childExited []os.Signal
)
