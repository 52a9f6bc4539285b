//go:build !linux

package locks

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// openLocked needs flock(2), O_NOFOLLOW and /proc: the scope registry is
// Linux-only for now.
func (f *ScopeFile) openLocked(ctx context.Context, access registryAccess) (*os.File, error) {
	return nil, fmt.Errorf("scope registry %s: %w", f.Path, errors.ErrUnsupported)
}
