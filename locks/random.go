package locks

import (
	"crypto/rand"
	"encoding/hex"
	"unsafe"

	"golang.org/x/sys/unix"
)

// randomID is a lock id: 128 random bits in hex. It must not repeat and
// nobody may predict it (a lock id that could be guessed would let another
// program release or renew a lock that is not its own), so it comes from
// the kernel's CSPRNG, the source crypto/rand reads too.
func randomID() string {
	var b [16]byte
	if !getrandom(b[:]) {
		rand.Read(b[:]) // aborts the program where the kernel has no randomness to give
	}
	return hex.EncodeToString(b[:])
}

// getrandom fills b with one getrandom(2) system call (Linux ≥ 3.17; it
// blocks only until the pool is first seeded, and a request of at most
// 256 bytes is never cut short once it is). crypto/rand and
// unix.Getrandom go through the vDSO instead, whose first use in a
// process maps and seeds per-thread state: about 0.3 ms here, on the
// hand-off's path, for the one id an acquisition draws.
func getrandom(b []byte) bool {
	for {
		n, _, errno := unix.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
		if errno != unix.EINTR {
			return errno == 0 && int(n) == len(b)
		}
	}
}
