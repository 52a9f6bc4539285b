package main

import (
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dieOf ends withlock by sig's default action, so that whoever waits for it
// sees it killed by sig (SPEC §2: the wait-and-cooperative-exit convention;
// a shell stops its loop). main calls it last, when every release has run.
// It returns only if the signal did not end the process; main then exits
// with 128+N.
//
// Go's own handler stays installed whatever os/signal is told, and would
// turn an unsubscribed QUIT into a crash dump, so the default action is
// restored with rt_sigaction itself: an all-zero struct sigaction is
// SIG_DFL in every architecture's layout. The signal is then unblocked and
// sent to this very thread (locked), which dies on its way out of tgkill.
// The core limit is set to 0 first, so QUIT leaves no core file.
func dieOf(sig syscall.Signal) {
	runtime.LockOSThread()
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var dfl [8]uint64    // larger than any struct sigaction; zero is SIG_DFL
	const sigsetSize = 8 // the kernel's sigset_t: 64 signals
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, sigsetSize, 0, 0); errno != 0 {
		return
	}
	var set unix.Sigset_t
	set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil); err != nil {
		return
	}
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), sig)
}
