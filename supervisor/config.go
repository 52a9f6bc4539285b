package supervisor

import (
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// LostPolicy says what Run does when the lock is lost while the child runs.
type LostPolicy int

const (
	// KillOnLost tears the child down (TERM → grace → KILL); status 76.
	KillOnLost LostPolicy = iota
	// WarnOnLost logs a warning and lets the child run on.
	WarnOnLost
)

// Config is what Run needs to start and supervise one child.
type Config struct {
	Argv []string // command and arguments; Argv[0] is looked up in the PATH of Env
	// Path, when set, is Argv[0] as LookPath already found it in the PATH
	// of Env: a caller that waits for a lock looks the command up before
	// the wait, so the hand-off to it does not include the PATH search.
	// Empty: Run looks Argv[0] up when it spawns.
	Path   string
	Env    []string // the child's complete environment; nil means os.Environ()
	Stdin  *os.File // nil means os.Stdin
	Stdout *os.File // nil means os.Stdout
	Stderr *os.File // nil means os.Stderr
	// The child gets no other descriptor of withlock's but the inheritable
	// ones (not close-on-exec): the lock's tree file.
	Grace   time.Duration // TERM → KILL grace; 0 kills at once
	Timeout time.Duration // 0 means none; on expiry TERM → grace → KILL, status 124
	Signals *Signals      // subscribed by the caller; nil makes Run subscribe itself
	// Watch, when set, starts watching the lock (its heartbeat) and
	// returns the channel that receives once when the lock is lost. Run
	// calls it once the child is forked, while it execs: starting the watch
	// is not on the way from the lock's acquisition to the command.
	Watch  func() (lost <-chan error)
	OnLost LostPolicy // what a loss reported by Watch's channel does
	// Verify, when set, checks that the lock is still held; Run calls it
	// when withlock is continued (SIGCONT), and after a job-control stop
	// before any of the child's tree runs again. An error is a lost lock
	// (OnLost decides; with KillOnLost a stopped tree is KILLed, status 76).
	Verify      func() error
	KeepOrphans bool // leave reparented daemons running after the main child ends
	Log         zerolog.Logger
}

// Reason says why the child ended.
type Reason int

const (
	Exited      Reason = iota // exited by itself with a status
	Signaled                  // died of a signal (forwarded, or KILL after the grace)
	TimedOut                  // killed because Timeout elapsed
	LockLost                  // killed because the lock was lost
	SpawnFailed               // never started
	Unreaped                  // still not gone after KILL and the final wait (e.g. in D state)
)

var reasonNames = [...]string{Exited: "exited", Signaled: "signaled", TimedOut: "timed out",
	LockLost: "lock lost", SpawnFailed: "spawn failed", Unreaped: "unreaped"}

func (r Reason) String() string {
	if r < 0 || int(r) >= len(reasonNames) {
		return "unknown"
	}
	return reasonNames[r]
}

// Result is how the child ended and the status withlock must exit with.
type Result struct {
	Status int            // withlock's exit status (SPEC §2 precedence)
	Reason Reason         // why the child ended
	Signal syscall.Signal // the signal the child died of, when Reason is Signaled
	Pid    int            // the child's pid; 0 when none was started
}
