package locks

import (
	"crypto/rand"
	"encoding/hex"

	"golang.org/x/sys/unix"
)

// randomID is a lock id: 128 random bits in hex. It must not repeat and
// nobody may predict it (a lock id that could be guessed would let another
// program release or renew a lock that is not its own), so it comes from
// the kernel's CSPRNG: one getrandom(2), which never fails on Linux ≥ 3.17
// and blocks only until the pool is first seeded. crypto/rand reads the
// same source, but through the vDSO: its first use in a process maps and
// faults in per-thread state (a few hundred µs on the hand-off's path,
// where an acquisition draws its only id). Should the call fail anyway,
// crypto/rand decides (it aborts the program where the kernel has no
// randomness to give).
func randomID() string {
	var b [16]byte
	if n, err := unix.Getrandom(b[:], 0); err != nil || n != len(b) {
		rand.Read(b[:])
	}
	return hex.EncodeToString(b[:])
}
