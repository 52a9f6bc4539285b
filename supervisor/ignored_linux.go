package supervisor

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigIgn is SIG_IGN, the handler value that ignores a signal.
const sigIgn = 1

// ignoredByKernel reports whether the kernel holds SIG_IGN for sig. It
// reads the disposition with rt_sigaction and changes nothing. Go installs
// its handler over most signals before any of withlock's code runs; CONT,
// TSTP, TTIN and TTOU it leaves alone until they are subscribed, so for
// them this is still the disposition withlock was started with (a parent's
// `trap ” TSTP`). The handler is the first word of struct sigaction except
// on MIPS, where the flags come first: there it answers false.
func ignoredByKernel(sig os.Signal) bool {
	s, ok := sig.(syscall.Signal)
	if !ok || strings.HasPrefix(runtime.GOARCH, "mips") {
		return false
	}
	var old [8]uint64 // larger than any struct sigaction
	const sigsetSize = 8
	if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), 0, uintptr(unsafe.Pointer(&old)), sigsetSize, 0, 0); errno != 0 {
		return false
	}
	return *(*uintptr)(unsafe.Pointer(&old[0])) == sigIgn
}
