//go:build !linux

package scope

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// oNoFollow is not needed: nothing is opened where openLocked fails.
const oNoFollow = 0

// openLocked needs flock(2), O_NOFOLLOW and /proc: the scope registry is
// Linux-only for now.
func (f *Registry) openLocked(ctx context.Context, access registryAccess) (*os.File, error) {
	return nil, fmt.Errorf("scope registry %s: %w", f.Path, errors.ErrUnsupported)
}
