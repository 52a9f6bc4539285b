package locks

import (
	"crypto/rand"
	"encoding/hex"
)

// randomID is a lock id: 128 random bits in hex. It must not repeat and
// nobody may predict it (a lock id that could be guessed would let another
// program release or renew a lock that is not its own), so it comes from
// crypto/rand, which never fails on Linux ≥ 3.17 (getrandom) and aborts the
// program where the kernel has no randomness to give.
func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
