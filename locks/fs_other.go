//go:build !linux

package locks

import "errors"

const (
	oNoFollow = 0
	oNonBlock = 0
)

var errNotRegular = errors.New("not a regular file")

// RenameNoReplace is Linux-only.
func (OSFS) RenameNoReplace(oldpath, newpath string) error { return errors.ErrUnsupported }
