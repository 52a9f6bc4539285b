package earlysig

import (
	"syscall"
	"unsafe"
)

// maskClear reports whether this thread (and so the process: Go gives every
// thread the mask it started with) blocks no signal. With signals blocked,
// main re-executes withlock to clear the mask (supervisor.ResetSignalMask);
// a signal caught by a subscription before that would be lost in the exec.
func maskClear() bool {
	var old [2]uint32 // the kernel's 64-bit sigset_t
	const sigBlock = 0
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, sigBlock, 0,
		uintptr(unsafe.Pointer(&old)), unsafe.Sizeof(old), 0, 0)
	return errno == 0 && old == [2]uint32{}
}
