package supervisor

import (
	"os"
	"os/signal"
	"syscall"
)

// Forwarded are the signals withlock passes on to the child's process group.
var Forwarded = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT,
}

// Signals is withlock's subscription to the forwarded signals. It is taken at
// the very start of a run, before the lock wait, so that a signal arriving
// while waiting or while the child is being spawned is queued, never lost.
type Signals struct {
	c chan os.Signal
	// inherited holds the forwarded signals that withlock's parent ignored
	// (nohup ignores HUP; sh ignores INT and QUIT for `cmd &`). They are
	// subscribed here and never read: Go then has a handler installed, which
	// fork resets to SIG_DFL for the child, so the child does not inherit the
	// ignore, while withlock itself keeps honouring it (neither forwarded nor
	// aborting the lock wait).
	inherited chan os.Signal
	// chld is SIGCHLD, taken with the others so that Run need not subscribe
	// (and unsubscribe) on its own: each change of Go's signal mask is a
	// round trip to the runtime's signal thread, 50–400 µs here.
	chld chan os.Signal
}

// signalBuffer is how many signals may queue before Run reads them; the
// signal package drops what does not fit.
const signalBuffer = 64

// Notify subscribes, at once, to the forwarded signals.
func Notify() *Signals {
	s := &Signals{
		c:         make(chan os.Signal, signalBuffer),
		inherited: make(chan os.Signal, 1),
		chld:      make(chan os.Signal, 1),
	}
	signal.Notify(s.chld, syscall.SIGCHLD)
	var wanted, ignored []os.Signal
	for _, sig := range Forwarded {
		if signal.Ignored(sig) {
			ignored = append(ignored, sig)
		} else {
			wanted = append(wanted, sig)
		}
	}
	signal.Notify(s.c, wanted...)
	if len(ignored) > 0 {
		signal.Notify(s.inherited, ignored...)
	}
	return s
}

// C delivers the signals withlock received; the caller reads it while
// waiting for the lock, and Run reads it while the child runs.
func (s *Signals) C() <-chan os.Signal { return s.c }

// NotifyInBackground subscribes like Notify on another goroutine and
// returns a function that waits for the subscription. withlock starts it
// first thing, so the subscription (a dozen round trips to Go's signal
// thread) overlaps parsing the command line instead of adding to it; it is
// awaited before the lock wait begins.
func NotifyInBackground() func() *Signals {
	done := make(chan *Signals, 1)
	go func() { done <- Notify() }()
	var s *Signals
	return func() *Signals {
		if s == nil {
			s = <-done
		}
		return s
	}
}

// Stop ends the subscription. A process about to exit need not call it:
// every unsubscription is another round trip to Go's signal thread.
func (s *Signals) Stop() {
	signal.Stop(s.c)
	signal.Stop(s.inherited)
	signal.Stop(s.chld)
}

// AbortsWait reports whether sig, received while waiting for the lock, ends
// the wait: true for the signals whose default action terminates.
func AbortsWait(sig os.Signal) bool {
	switch sig {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGUSR1, syscall.SIGUSR2:
		return true
	}
	return false
}

// startsTeardown reports whether sig, received while the child runs, also
// starts teardown (forward, wait the grace, KILL) rather than being only
// forwarded.
func startsTeardown(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGINT
}

// ExitStatusForSignal is the shell's status for death by sig: 128+N.
func ExitStatusForSignal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}
