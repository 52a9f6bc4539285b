//go:build !linux

package locks

import (
	"errors"
	"io/fs"
	"os"
)

// Without flock(2) there is no tree file: only the TTL and the pid say
// whether a lock is held.
func createTree(fsys FS, path string, perm fs.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}
func reuseTree(fsys FS, spare, path string, perm fs.FileMode) *os.File { return nil }
func probeTree(path string) TreeState                                  { return TreeUnknown }
func awaitTreeEnd(path string) <-chan struct{}                         { return nil }
func treePids(path string) (pids []int, ok bool)                       { return nil, false }
