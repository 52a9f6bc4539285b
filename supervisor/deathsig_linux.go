package supervisor

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// parentAtStart is withlock's parent as seen at start-up, to tell afterwards
// whether the parent died before DieWithParent armed the signal.
var parentAtStart = os.Getppid()

// DieWithParent asks the kernel to send withlock SIGTERM when its parent
// dies (--die-with-parent). TERM rather than KILL: withlock handles TERM like
// any TERM — it aborts a lock wait (status 143), or tears the child's whole
// tree down (forward, grace, KILL, leftovers) — whereas a KILLed withlock
// would leave the child's reparented daemons behind. Call it after Notify,
// so that the TERM is caught. If the parent is already gone, the TERM is
// sent at once.
//
// The kernel ties the parent-death signal to the parent's forking thread:
// a multithreaded parent whose forking thread exits early triggers it too.
func DieWithParent() error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGTERM), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_PDEATHSIG: %w", err)
	}
	if os.Getppid() != parentAtStart {
		if err := unix.Kill(os.Getpid(), unix.SIGTERM); err != nil {
			return fmt.Errorf("parent already gone; signal self: %w", err)
		}
	}
	return nil
}
