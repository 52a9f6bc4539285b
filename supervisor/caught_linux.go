package supervisor

import (
	"os"
	"syscall"
)

var (
	// caught is every standard signal but these: KILL and STOP (they
	// cannot be caught), CHLD (the reaper's, subscribed once the child is
	// forked), URG (the Go runtime's preemption signal, which runc skips
	// too) and PROF (the runtime's profiler consumes a PROF sent to the
	// process; os/signal never delivers one). Realtime signals are not
	// subscribed: each subscription is a round trip to Go's signal thread
	// on every start (30 more of them), an unsubscribed one is discarded by
	// the runtime, and 32–34, the C libraries' own, stay at their default
	// in a Go program whatever it asks.
	caught = append([]os.Signal{
		syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL,
		syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE,
		syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
		syscall.SIGALRM, syscall.SIGTERM, syscall.SIGCONT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGXCPU,
		syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGWINCH, syscall.SIGIO,
		syscall.SIGPWR, syscall.SIGSYS,
	}, stackFault...)
	childChanged = []os.Signal{syscall.SIGCHLD}
)
