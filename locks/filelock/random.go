package filelock

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
//
// It is drawn with one getrandom(2) system call (Linux ≥ 3.17; a request of
// at most 256 bytes is never cut short once the pool is seeded).
// crypto/rand and unix.Getrandom go through the vDSO instead, whose first
// use in a process maps and seeds per-thread state: about 0.3 ms, on the
// hand-off's path, for the one id an acquisition draws. Should the call
// fail (interrupted while the pool is not yet seeded, or filtered by a
// sandbox), crypto/rand decides: it aborts the program where the kernel has
// no randomness to give.
func randomID() string {
	var b [16]byte
	n, _, errno := unix.Syscall(unix.SYS_GETRANDOM, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0)
	if errno != 0 || int(n) != len(b) {
		rand.Read(b[:])
	}
	return hex.EncodeToString(b[:])
}
