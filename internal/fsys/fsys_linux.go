package fsys

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

const (
	oNoFollow = unix.O_NOFOLLOW
	oNonBlock = unix.O_NONBLOCK
)

// RenameNoReplace uses renameat2(RENAME_NOREPLACE). Filesystems that lack it
// (EINVAL) fall back to link + unlink, which never replaces either.
func (OS) RenameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	if err := os.Link(oldpath, newpath); err != nil {
		return err
	}
	return os.Remove(oldpath)
}

// Rename is rename(2). os.Rename first looks at newpath (an Lstat, one
// more path walk on every renewal and release) only to turn a rename over
// a directory into EEXIST; rename(2) refuses that too (EISDIR).
func (OS) Rename(oldpath, newpath string) error {
	err := unix.Renameat(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath)
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// OpenUnnamed opens an O_TMPFILE in dir. O_NONBLOCK, which changes
// nothing for a regular file's writes, keeps os.OpenFile from setting and
// clearing it around its poller check.
func (OS) OpenUnnamed(dir string, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(dir, unix.O_TMPFILE|os.O_WRONLY|unix.O_NONBLOCK, perm)
	switch {
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL):
		// No O_TMPFILE here (old kernel: EISDIR; filesystem: EOPNOTSUPP).
		return nil, errors.ErrUnsupported
	case err != nil:
		return nil, err
	}
	return f, nil
}

// LinkUnnamed links an O_TMPFILE into place through /proc/self/fd, which,
// unlike linkat's AT_EMPTY_PATH, needs no CAP_DAC_READ_SEARCH.
func (OS) LinkUnnamed(f *os.File, path string) error {
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: proc, New: path, Err: err}
	}
	return nil
}

// clearNonblock makes f's descriptor blocking; a regular file is never in
// Go's poller, so this changes only the flag others see.
func clearNonblock(f *os.File) error { return unix.SetNonblock(int(f.Fd()), false) }
