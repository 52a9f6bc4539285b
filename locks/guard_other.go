//go:build !linux

package locks

import (
	"errors"
	"os"
	"time"
)

func lockGuard(fsys FS, path string, bound time.Duration) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

func unlockGuard(f *os.File) {}

func pread(f *os.File, buf []byte, off int64) (int, error) {
	return 0, errors.ErrUnsupported
}
