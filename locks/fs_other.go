//go:build !linux

package locks

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

const (
	oNoFollow = 0
	oNonBlock = 0
)

var errNotRegular = errors.New("not a regular file")

// RenameNoReplace is Linux-only.
func (OSFS) RenameNoReplace(oldpath, newpath string) error { return errors.ErrUnsupported }

func (OSFS) WriteNew(path string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (OSFS) ReadLockFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	return data, fi, err
}

func (OSFS) OpenGuard(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
}

// WriteUnnamed is Linux-only (O_TMPFILE).
func (OSFS) WriteUnnamed(dir string, data []byte, perm fs.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// LinkUnnamed is Linux-only.
func (OSFS) LinkUnnamed(f *os.File, path string) error { return errors.ErrUnsupported }

func (OSFS) OpenCounter(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow|oNonBlock, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errNotRegular
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return f, nil
}
