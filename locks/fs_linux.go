package locks

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const (
	oNoFollow = unix.O_NOFOLLOW
	oNonBlock = unix.O_NONBLOCK
)

var errNotRegular = errors.New("not a regular file")

// RenameNoReplace uses renameat2(RENAME_NOREPLACE). Filesystems that lack it
// (EINVAL) fall back to link + unlink, which never replaces either.
func (OSFS) RenameNoReplace(oldpath, newpath string) error {
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
