package supervisor

import (
	"fmt"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// maskResetVar marks the one re-execution ResetSignalMask may do, so it can
// never loop.
const maskResetVar = "WITHLOCK_SIGMASK_RESET"

// ResetSignalMask makes sure withlock runs — and so its child starts — with
// no signal blocked. A blocked mask is inherited across fork and exec, and
// Go gives every thread the mask the process started with, so a withlock
// started with signals blocked (some job runners and CI agents do that)
// would neither receive them nor let its child see them. The only way to a
// clean mask is to start again: on a locked thread, clear the mask and
// exec ourselves. Called first thing in main; costs one rt_sigprocmask when
// nothing is blocked.
func ResetSignalMask() error {
	if os.Getenv(maskResetVar) != "" {
		os.Unsetenv(maskResetVar)
		return nil
	}
	// Every thread starts with the process' initial mask, so any thread
	// can tell; only the rare re-exec needs to stay on one thread.
	var old unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &old); err != nil {
		return fmt.Errorf("read signal mask: %w", err)
	}
	if old == (unix.Sigset_t{}) {
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable to clear the signal mask: %w", err)
	}
	var none unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &none, nil); err != nil {
		return fmt.Errorf("clear signal mask: %w", err)
	}
	err = syscall.Exec(exe, os.Args, append(os.Environ(), maskResetVar+"=1"))
	// Exec failed: keep running as we are, with the mask restored.
	unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return fmt.Errorf("re-exec %s to clear the signal mask: %w", exe, err)
}
