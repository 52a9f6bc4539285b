//go:build !linux

package fsys

import (
	"errors"
	"io/fs"
	"os"
)

const (
	oNoFollow = 0
	oNonBlock = 0
)

func (OS) Rename(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }

// RenameNoReplace is Linux-only (renameat2).
func (OS) RenameNoReplace(oldpath, newpath string) error {
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errors.ErrUnsupported}
}

// OpenUnnamed is Linux-only (O_TMPFILE); callers fall back to WriteNew.
func (OS) OpenUnnamed(dir string, perm fs.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// LinkUnnamed is Linux-only.
func (OS) LinkUnnamed(f *os.File, path string) error {
	return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: errors.ErrUnsupported}
}

func clearNonblock(f *os.File) error { return nil }
