package locks

import (
	"crypto/rand"
	"encoding/hex"
)

// randomBytes fills b for a lock id or a random scope name: values that must
// not repeat and that nobody can predict (a lock id that could be guessed
// would let another program release or renew a lock that is not its own),
// so they come from crypto/rand. It never fails on Linux ≥ 3.17 (getrandom)
// and aborts the program where the kernel has no randomness to give.
func randomBytes(b []byte) {
	rand.Read(b)
}

// randomID is a lock id: 128 random bits in hex.
func randomID() string {
	var b [16]byte
	randomBytes(b[:])
	return hex.EncodeToString(b[:])
}
