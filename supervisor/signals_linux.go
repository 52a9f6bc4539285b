package supervisor

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
)

// Caught are the signals withlock subscribes to. While the child runs,
// TERM and INT start the teardown, TSTP, TTIN and TTOU stop the child's
// tree and withlock with it, and every other one is forwarded to the
// child's process group; while withlock waits for the lock, see AbortsWait
// and StopsJob.
//
// It is every standard signal but these: KILL and STOP (they
// cannot be caught), CHLD (the reaper's, subscribed once the child is
// forked), URG (the Go runtime's preemption signal, which runc skips
// too) and PROF (the runtime's profiler consumes a PROF sent to the
// process; os/signal never delivers one). Realtime signals are not
// subscribed: each subscription is a round trip to Go's signal thread
// on every start (30 more of them), an unsubscribed one is discarded by
// the runtime, and 32–34, the C libraries' own, stay at their default
// in a Go program whatever it asks.
var Caught = append([]os.Signal{
	syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGILL,
	syscall.SIGTRAP, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE,
	syscall.SIGUSR1, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGPIPE,
	syscall.SIGALRM, syscall.SIGTERM, syscall.SIGCONT,
	syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGXCPU,
	syscall.SIGXFSZ, syscall.SIGVTALRM, syscall.SIGWINCH, syscall.SIGIO,
	syscall.SIGPWR, syscall.SIGSYS,
}, stackFault...)

// Signals is withlock's subscription to the caught signals and SIGCHLD. It
// is taken at the very start of a run, before the lock wait, so that a
// signal arriving while waiting or while the child is being spawned is
// queued, never lost.
//
// A signal that withlock's parent left ignored is not subscribed where Go
// kept the inherited SIG_IGN (HUP and INT: `nohup`, `trap "" HUP INT`,
// `sh -c 'cmd &'`; and CONT, TSTP, TTIN, TTOU, which Go leaves alone until
// asked): it stays ignored, so the kernel discards it for withlock, and it
// stays ignored in the child, as it would for any command run under nohup. (Go installs its own handler over an inherited SIG_IGN
// of any other signal before withlock's code runs; the child then starts
// with that signal at its default.)
type Signals struct {
	c chan os.Signal
	// chld is SIGCHLD: an orphan the supervisor adopted has exited, or a
	// child stopped or continued (the main child's exit it learns from
	// waitid).
	chld     chan os.Signal
	complete sync.Once
	caught   []os.Signal   // what the subscription covers, once ready
	ready    chan struct{} // closed once the subscription is in place
}

// buffer is how many signals may queue before they are read; the signal
// package drops what does not fit.
const buffer = 64

// NotifyAsync returns the subscription at once and makes it on a goroutine
// of its own: each signal's subscription is a round trip to Go's signal
// thread, and started first thing, the ~26 of them run alongside the
// command-line parsing and the lock's acquisition instead of before them.
// Until it is in place (Wait), a signal gets what Go gives an unsubscribed
// one, as in any Go program that has just started: TERM, HUP, INT and the
// like end the process, USR1, USR2, WINCH and the like are dropped. Run
// waits for it before it spawns the child, and a lock wait must wait for
// it before it blocks.
func NotifyAsync() *Signals {
	s := &Signals{c: make(chan os.Signal, buffer), chld: make(chan os.Signal, 1), ready: make(chan struct{})}
	go s.subscribe()
	return s
}

func (s *Signals) subscribe() {
	if failpoint.On(failpoint.SlowSubscribe) || failpoint.On(failpoint.WaitUnsubscribed) {
		time.Sleep(300 * time.Millisecond)
	}
	s.caught = make([]os.Signal, 0, len(Caught))
	for _, sig := range Caught {
		if !signal.Ignored(sig) {
			s.caught = append(s.caught, sig)
		}
	}
	signal.Notify(s.c, s.caught...)
	close(s.ready)
}

// Wait returns once the subscription is in place.
func (s *Signals) Wait() { <-s.ready }

// Complete subscribes SIGCHLD; the supervisor calls it once the child is
// forked, so the subscription's round trip to Go's signal thread overlaps
// the child's exec. It is idempotent.
func (s *Signals) Complete() {
	s.complete.Do(func() { signal.Notify(s.chld, syscall.SIGCHLD) })
}

// C delivers the caught signals received.
func (s *Signals) C() <-chan os.Signal { return s.c }

// Chld delivers SIGCHLD.
func (s *Signals) Chld() <-chan os.Signal { return s.chld }

// Stop ends the subscription. A process about to exit need not call it:
// every unsubscription is another round trip to Go's signal thread.
func (s *Signals) Stop() {
	s.Wait()
	signal.Stop(s.c)
	signal.Stop(s.chld)
}

// ExitStatusForSignal is the shell's status for death by sig: 128+N.
func ExitStatusForSignal(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + int(syscall.SIGTERM)
}

// AbortsWait reports whether sig, received while waiting for the lock, ends
// the wait (status 128+N, or death by INT and QUIT): true for every caught
// signal whose default action ends a process. CONT and WINCH are ignored
// while waiting; TSTP, TTIN and TTOU stop withlock (see StopsJob).
func AbortsWait(sig os.Signal) bool {
	switch sig {
	case syscall.SIGCONT, syscall.SIGWINCH, syscall.SIGCHLD, syscall.SIGURG:
		return false
	}
	return !StopsJob(sig)
}

// StopsJob reports whether sig is a job-control stop (TSTP, TTIN, TTOU):
// while waiting for the lock withlock stops itself (StopSelf), while the
// child runs it stops the child's tree and then itself.
func StopsJob(sig os.Signal) bool {
	return sig == syscall.SIGTSTP || sig == syscall.SIGTTIN || sig == syscall.SIGTTOU
}

// startsTeardown reports whether sig, received while the child runs, also
// starts teardown (forward, wait the grace, KILL) rather than being only
// forwarded.
func startsTeardown(sig os.Signal) bool {
	return sig == syscall.SIGTERM || sig == syscall.SIGINT
}
