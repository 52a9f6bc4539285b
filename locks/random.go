package locks

import (
	"encoding/binary"
	"math/rand/v2"
)

// randomBytes fills b for a lock id or a random scope name: values that must not
// repeat and that nobody can predict, not key material. They come from the
// runtime's ChaCha8 generator (math/rand/v2's top-level functions), which
// Go seeds per process from the kernel's CSPRNG (the 16 random bytes every
// exec gets in its auxiliary vector, AT_RANDOM). A getrandom(2) call for
// them was the first system call of its kind in the process and cost
// ~25 µs at start-up; crypto/rand would also link its DRBG and AES-GCM.
func randomBytes(b []byte) {
	var word [8]byte
	for len(b) > 0 {
		binary.LittleEndian.PutUint64(word[:], rand.Uint64())
		b = b[copy(b, word[:]):]
	}
}
