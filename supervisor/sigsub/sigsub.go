// Package sigsub is withlock's subscription to the signals its supervisor
// forwards. It imports nothing but the standard library's signal support, so
// a program can start the subscription while its heavier packages are still
// being initialised (cmd/withlock/internal/earlysig does).
package sigsub

import (
	"os"
	"os/signal"
	"sync"
)

// Forwarded are the signals withlock passes on to the child's process group
// (signals_unix.go; elsewhere the interrupt alone, for a clean failure).
var Forwarded = forwarded

// Subscription is withlock's subscription to the forwarded signals. It is
// taken at the very start of a run, before the lock wait, so that a signal
// arriving while waiting or while the child is being spawned is queued,
// never lost. Only SIGCHLD, which reports orphans the supervisor adopted,
// waits for Complete, called once the child is forked: each subscription
// is a round trip to Go's signal thread, and that one then overlaps the
// child's exec instead of delaying it. (A forwarded signal cannot wait: the
// child may be ready, and someone signalling it through withlock, before
// a supervisor on a busy CPU gets to subscribe.)
type Subscription struct {
	c chan os.Signal
	// inherited holds the forwarded signals that withlock's parent ignored
	// (nohup ignores HUP; sh ignores INT and QUIT for `cmd &`). They are
	// subscribed here and never read: Go then has a handler installed, which
	// fork resets to SIG_DFL for the child, so the child does not inherit the
	// ignore, while withlock itself keeps honouring it (neither forwarded nor
	// aborting the lock wait).
	inherited chan os.Signal
	// chld is SIGCHLD, which tells the supervisor that an orphan it adopted
	// has exited (the main child's exit it learns from waitid).
	chld     chan os.Signal
	complete sync.Once
}

// buffer is how many signals may queue before they are read; the signal
// package drops what does not fit.
const buffer = 64

// Subscribe subscribes, at once, to the forwarded signals.
func Subscribe() *Subscription {
	s := &Subscription{
		c:         make(chan os.Signal, buffer),
		inherited: make(chan os.Signal, 1),
		chld:      make(chan os.Signal, 1),
	}
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

// Complete subscribes SIGCHLD; the supervisor calls it once the child is
// forked. It is idempotent.
func (s *Subscription) Complete() {
	s.complete.Do(func() {
		if len(childExited) > 0 { // Notify with no signals would relay them all
			signal.Notify(s.chld, childExited...)
		}
	})
}

// InBackground subscribes like Subscribe on another goroutine and returns a
// function that waits for the subscription: the dozen round trips to Go's
// signal thread then overlap the caller's own start-up.
func InBackground() func() *Subscription {
	done := make(chan *Subscription, 1)
	go func() { done <- Subscribe() }()
	var s *Subscription
	return func() *Subscription {
		if s == nil {
			s = <-done
		}
		return s
	}
}

// C delivers the forwarded signals received.
func (s *Subscription) C() <-chan os.Signal { return s.c }

// Chld delivers SIGCHLD.
func (s *Subscription) Chld() <-chan os.Signal { return s.chld }

// Stop ends the subscription. A process about to exit need not call it:
// every unsubscription is another round trip to Go's signal thread.
func (s *Subscription) Stop() {
	signal.Stop(s.c)
	signal.Stop(s.inherited)
	signal.Stop(s.chld)
}
