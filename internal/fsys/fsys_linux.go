// Package fsys is the small filesystem layer the lock code goes through, so
// that tests can inject faults deterministically (mkdir always fails, a write
// fails, a rename fails, a pause between a read and a rename): SPEC §3.
//
// OS is the real filesystem. Tests wrap it, embedding OS and overriding the
// operations they break. Errors are *fs.PathError (or *os.LinkError for the
// two-path operations), as package os returns them, so callers match causes
// with errors.Is (fs.ErrNotExist, fs.ErrExist, syscall.EACCES, …).
package fsys

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// FS is the set of filesystem operations a lock performs.
type FS interface {
	Mkdir(path string, perm fs.FileMode) error
	Lstat(path string) (fs.FileInfo, error)
	// ReadLockFile reads at most limit+1 bytes of a regular file (so a
	// caller can tell an oversized one) without following a symlink and
	// without blocking on a FIFO; anything but a regular file is refused
	// with ErrNotRegular, its FileInfo returned with the error.
	ReadLockFile(path string, limit int64) ([]byte, fs.FileInfo, error)
	// WriteNew creates path exclusively (O_EXCL, no symlink followed) with
	// perm, writes data and closes. On error nothing is left behind. It
	// does not fsync: a lock means nothing after a crash of the machine
	// (the boot id changes and a torn file is judged stale).
	WriteNew(path string, data []byte, perm fs.FileMode) error
	// OpenUnnamed opens a new, empty file in dir that has no name yet
	// (O_TMPFILE), for writing; errors.ErrUnsupported when the filesystem
	// or kernel cannot, and the caller uses WriteNew instead. Dropped
	// unlinked, it vanishes: there is no temp name to remove.
	OpenUnnamed(dir string, perm fs.FileMode) (*os.File, error)
	// LinkUnnamed gives an OpenUnnamed file the name path, failing with
	// EEXIST when path exists, like Link.
	LinkUnnamed(f *os.File, path string) error
	Link(oldpath, newpath string) error
	// RenameNoReplace renames without ever replacing newpath (EEXIST when
	// newpath exists).
	RenameNoReplace(oldpath, newpath string) error
	// Rename replaces newpath atomically.
	Rename(oldpath, newpath string) error
	Remove(path string) error
	// OpenGuard opens (creating 0600, no symlink followed) a file that is
	// only ever flocked: a guard.
	OpenGuard(path string) (*os.File, error)
	// OpenCounter opens (creating 0600) a small regular file for reading
	// and rewriting in place, without following a symlink or blocking on a
	// FIFO; anything but a regular file is refused with ErrNotRegular.
	OpenCounter(path string) (*os.File, error)
	// OpenTree opens a tree file read-write without following a symlink:
	// with create, a new one with perm (O_EXCL: fs.ErrExist when path
	// exists); without, an existing one. Its descriptor is handed to the
	// command, so it is a plain (blocking) one, as OpenCounter's.
	OpenTree(path string, create bool, perm fs.FileMode) (*os.File, error)
}

// ErrNotRegular: the path names something other than a regular file (a
// FIFO, a device, a directory, a symlink), which a lock never is.
var ErrNotRegular = errors.New("not a regular file")

// OS is the real filesystem. The zero value is ready to use.
type OS struct{}

func (OS) Mkdir(path string, perm fs.FileMode) error { return os.Mkdir(path, perm) }
func (OS) Lstat(path string) (fs.FileInfo, error)    { return os.Lstat(path) }
func (OS) Link(oldpath, newpath string) error        { return os.Link(oldpath, newpath) }
func (OS) Remove(path string) error                  { return os.Remove(path) }

func (OS) WriteNew(path string, data []byte, perm fs.FileMode) error {
	return writeNew(path, data, perm, false)
}

// WriteSynced is WriteNew that fsyncs the file before it returns: for what
// must be on the device before the next step (the scope registry's
// backup, locks/scope).
func (OS) WriteSynced(path string, data []byte, perm fs.FileMode) error {
	return writeNew(path, data, perm, true)
}

func writeNew(path string, data []byte, perm fs.FileMode, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func (OS) ReadLockFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := openRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fi, err
	}
	defer f.Close()
	// A /proc file reports size 0 and is read to its end all the same.
	// Any other regular file has reached its end once a read returns less
	// than asked for: the read that would say so is not made (a lock file
	// is one read, not two).
	if size := fi.Size(); size > 0 && size <= limit {
		buf := make([]byte, size+1)
		n, err := f.Read(buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fi, err
		}
		if n < len(buf) {
			return buf[:n], fi, nil
		}
		rest, err := io.ReadAll(io.LimitReader(f, limit+1-int64(n)))
		return append(buf, rest...), fi, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	return data, fi, err
}

// OpenCounter clears O_NONBLOCK once the file is known to be regular: the
// descriptor may be handed to other programs (a run's command inherits its
// tree file), which expect a plain one.
func (OS) OpenCounter(path string) (*os.File, error) {
	f, _, err := openRegular(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return blocking(f, path)
}

// OpenTree opens with O_NONBLOCK, so that os.OpenFile leaves the flag
// alone instead of setting and clearing it around its poller check, and
// then clears it: the descriptor is handed to the command, which expects
// a plain (blocking) one.
func (OS) OpenTree(path string, create bool, perm fs.FileMode) (*os.File, error) {
	flag := os.O_RDWR | unix.O_NOFOLLOW | unix.O_NONBLOCK
	if create {
		flag |= os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	f, err = blocking(f, path)
	if err != nil && create {
		os.Remove(path)
	}
	return f, err
}

// blocking clears O_NONBLOCK on f, opened at path with it, for a
// descriptor that may be handed to other programs; on failure f is closed.
// A regular file is never in Go's poller, so this changes only the flag
// others see.
func blocking(f *os.File, path string) (*os.File, error) {
	if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return f, nil
}

// OpenGuard opens with O_NONBLOCK, like openRegular: a guard is only
// ever flocked (flock(2) blocks or not by its own LOCK_NB), its descriptor
// is never inherited, and os.OpenFile then leaves the flag alone instead
// of setting and clearing it around its poller check (four fcntl calls on
// every state transition's path).
func (OS) OpenGuard(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
}

// openRegular opens path without following a symlink and without blocking
// on a FIFO (O_NONBLOCK, which changes nothing for a regular file's reads,
// writes or flocks), and refuses anything but a regular file (its FileInfo
// is returned with the refusal). It returns the file's FileInfo too.
func openRegular(path string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, perm)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: ErrNotRegular}
	}
	if err != nil {
		f.Close()
		return nil, fi, err
	}
	return f, fi, nil
}

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
