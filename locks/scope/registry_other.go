//go:build !linux

package scope

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// oNoFollow and oNonblock are not needed: nothing is opened where
// openLocked fails.
const (
	oNoFollow = 0
	oNonblock = 0
)

// openLocked needs flock(2), O_NOFOLLOW and /proc: the scope registry is
// Linux-only for now.
func (f *Registry) openLocked(ctx context.Context, access registryAccess) (*os.File, error) {
	return nil, fmt.Errorf("scope registry %s: %w", f.Path, errors.ErrUnsupported)
}

func modTime(*os.File) (time.Time, bool) { return time.Time{}, false }
func neverWritten(*os.File) bool         { return false }
func fileStamp(*os.File) (Stamp, bool)   { return Stamp{}, false }
func pathStamp(string) (Stamp, bool)     { return Stamp{}, false }
