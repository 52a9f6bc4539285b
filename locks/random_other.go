//go:build !linux

package locks

import "crypto/rand"

// randomBytes fills b from the system's CSPRNG.
func randomBytes(b []byte) {
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
}
