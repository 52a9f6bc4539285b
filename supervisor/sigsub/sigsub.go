// Package sigsub is withlock's subscription to the signals its supervisor
// forwards. It imports nothing but the standard library's signal support, so
// a program can start the subscription while its heavier packages are still
// being initialised (cmd/withlock/internal/earlysig does).
package sigsub

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Forwarded are the signals withlock passes on to the child's process group.
var Forwarded = []os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT,
}

// Subscription is withlock's subscription to the forwarded signals. It is
// taken at the very start of a run, before the lock wait, so that a signal
// arriving while waiting or while the child is being spawned is queued,
// never lost. Only SIGWINCH, SIGCONT and SIGCHLD, which mean nothing until
// there is a child, wait for Complete, called once the child is forked:
// each subscription is a round trip to Go's signal thread, and these three
// then overlap the child's exec instead of delaying it.
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
	chld chan os.Signal
	// later are the forwarded signals Complete subscribes.
	later    []os.Signal
	complete sync.Once
}

// childOnly are the signals that matter only once there is a child: a
// terminal resize and a continue are for it (the kernel continues withlock
// itself whatever its handler), and SIGCHLD reports its adopted orphans.
// One that arrives before Complete is not forwarded, and the child, not yet
// started, misses nothing: it reads the terminal's size itself.
func childOnly(sig os.Signal) bool {
	return sig == syscall.SIGWINCH || sig == syscall.SIGCONT
}

// buffer is how many signals may queue before they are read; the signal
// package drops what does not fit.
const buffer = 64

// Subscribe subscribes, at once, to the forwarded signals that matter
// before there is a child, and to every one withlock's parent ignored.
func Subscribe() *Subscription {
	s := &Subscription{
		c:         make(chan os.Signal, buffer),
		inherited: make(chan os.Signal, 1),
		chld:      make(chan os.Signal, 1),
	}
	var wanted, ignored []os.Signal
	for _, sig := range Forwarded {
		switch {
		case signal.Ignored(sig):
			// Before the fork even if child-only: the handler is what
			// keeps the child from inheriting the ignore.
			ignored = append(ignored, sig)
		case childOnly(sig):
			s.later = append(s.later, sig)
		default:
			wanted = append(wanted, sig)
		}
	}
	signal.Notify(s.c, wanted...)
	if len(ignored) > 0 {
		signal.Notify(s.inherited, ignored...)
	}
	return s
}

// Complete subscribes the child-only signals and SIGCHLD; the supervisor
// calls it once the child is forked. It is idempotent.
func (s *Subscription) Complete() {
	s.complete.Do(func() {
		signal.Notify(s.chld, syscall.SIGCHLD)
		if len(s.later) > 0 {
			signal.Notify(s.c, s.later...)
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
