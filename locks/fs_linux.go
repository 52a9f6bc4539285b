package locks

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

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

// The lock files are opened with plain system calls. os.OpenFile would
// also try to register each regular file with Go's poller (three more
// system calls, all failing or undoing), and a run opens seven or eight
// small files on its way from start to exit.

// openRaw opens path close-on-exec, retrying EINTR; errors are *fs.PathError
// as os.OpenFile returns them.
func openRaw(path string, flag int, perm fs.FileMode) (int, error) {
	for {
		fd, err := unix.Open(path, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return fd, nil
		}
		if err != unix.EINTR {
			return -1, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

func (OSFS) WriteNew(path string, data []byte, perm fs.FileMode) error {
	fd, err := openRaw(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	err = writeAll(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlink(path)
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// ReadLockFile opens without following a symlink and without blocking on a
// FIFO, refuses anything but a regular file, and reads at most limit+1
// bytes (so a caller can tell an oversized file).
func (OSFS) ReadLockFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	fd, err := openRaw(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	fi := &statInfo{name: filepath.Base(path), st: st}
	if !fi.Mode().IsRegular() {
		return nil, fi, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
	}
	// A /proc or /sys file reports size 0 and its short contents come whole
	// in one read: start with 512 bytes, not a buffer grown from one byte
	// (six reads for the boot id instead of two).
	size := st.Size
	if size <= 0 {
		size = 512
	}
	data := make([]byte, 0, min(size, limit)+1)
	for int64(len(data)) <= limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return data, fi, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		data = data[:len(data)+n]
	}
	if int64(len(data)) > limit+1 {
		data = data[:limit+1]
	}
	return data, fi, nil
}

// OpenCounter opens the fencing counter without following a symlink or
// blocking on a FIFO, refuses anything but a regular file, and hands Go a
// blocking descriptor: os.OpenFile would try to register it with the
// poller, and that first registration sets the poller up (epoll_create,
// eventfd, epoll_ctl) in a run that otherwise never needs it.
func (OSFS) OpenCounter(path string) (*os.File, error) {
	fd, err := openRaw(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

func (OSFS) OpenGuard(path string) (*os.File, error) {
	fd, err := openRaw(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil // blocking: not handed to the poller
}

// statInfo is the fs.FileInfo of an fstat, as os.Stat would make it.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (i *statInfo) Name() string       { return i.name }
func (i *statInfo) Size() int64        { return i.st.Size }
func (i *statInfo) ModTime() time.Time { return time.Unix(i.st.Mtim.Unix()) }
func (i *statInfo) IsDir() bool        { return i.Mode().IsDir() }
func (i *statInfo) Sys() any           { return &i.st }
func (i *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(i.st.Mode & 0o777)
	switch i.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if i.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if i.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// writeAll writes all of data to fd, retrying EINTR and short writes.
func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// WriteUnnamed opens an O_TMPFILE in dir and writes data to it.
func (OSFS) WriteUnnamed(dir string, data []byte, perm fs.FileMode) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	switch {
	case err == unix.EOPNOTSUPP || err == unix.EISDIR || err == unix.EINVAL:
		// No O_TMPFILE here (old kernel: EISDIR; filesystem: EOPNOTSUPP).
		return nil, errors.ErrUnsupported
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	err = writeAll(fd, data)
	if err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "write", Path: dir, Err: err}
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// LinkUnnamed links an O_TMPFILE into place through /proc/self/fd, which,
// unlike linkat's AT_EMPTY_PATH, needs no CAP_DAC_READ_SEARCH.
func (OSFS) LinkUnnamed(f *os.File, path string) error {
	var buf [32]byte
	proc := strconv.AppendInt(append(buf[:0], "/proc/self/fd/"...), int64(f.Fd()), 10)
	err := unix.Linkat(unix.AT_FDCWD, string(proc), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: string(proc), New: path, Err: err}
	}
	return nil
}
