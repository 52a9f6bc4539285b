package locks

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// randomBytes fills b from the kernel's CSPRNG with getrandom(2), the
// source crypto/rand reads too. Linking crypto/rand for a lock id would add
// its DRBG, AES-GCM and math/big packages to every start: their
// initialisation and a first read cost ~35 µs of a run's ~1 ms of its own.
// For up to 256 bytes getrandom returns them all once the pool is ready.
func randomBytes(b []byte) {
	for len(b) > 0 {
		n, err := unix.Getrandom(b, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			panic(fmt.Sprintf("getrandom: %v", err)) // only without a kernel CSPRNG
		}
		b = b[n:]
	}
}
