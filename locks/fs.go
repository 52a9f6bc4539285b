package locks

import (
	"io/fs"
	"os"
)

// FS is the small set of filesystem operations the run lock performs. The
// real implementation is OSFS; tests wrap it to inject faults (mkdir always
// fails, write fails, rename fails) deterministically.
type FS interface {
	Mkdir(path string, perm fs.FileMode) error
	Lstat(path string) (fs.FileInfo, error)
	// ReadLockFile reads at most limit+1 bytes of a regular file without
	// following a symlink and without blocking on a FIFO.
	ReadLockFile(path string, limit int64) ([]byte, fs.FileInfo, error)
	// WriteNew creates path exclusively (O_EXCL, no symlink follow) with
	// perm, writes data and closes. On error nothing is left behind. It does
	// not fsync: a lock means nothing after a crash of the machine (the
	// boot id changes and a torn file is judged stale), and an fsync costs
	// more than the rest of an acquisition on a disk-backed /tmp.
	WriteNew(path string, data []byte, perm fs.FileMode) error
	// WriteUnnamed writes data to a new file in dir that has no name yet
	// (O_TMPFILE) and returns it open; errors.ErrUnsupported when the
	// filesystem or kernel cannot, and the caller uses WriteNew instead.
	// Dropped unlinked, it vanishes: there is no temp name to remove.
	WriteUnnamed(dir string, data []byte, perm fs.FileMode) (*os.File, error)
	// LinkUnnamed gives a WriteUnnamed file the name path, failing with
	// EEXIST when path exists, like Link.
	LinkUnnamed(f *os.File, path string) error
	Link(oldpath, newpath string) error
	// RenameNoReplace renames without ever replacing newpath (EEXIST when
	// newpath exists).
	RenameNoReplace(oldpath, newpath string) error
	// Rename replaces newpath atomically.
	Rename(oldpath, newpath string) error
	Remove(path string) error
	// OpenGuard opens (creating 0600) the guard file used for flock.
	OpenGuard(path string) (*os.File, error)
	// OpenCounter opens (creating 0600) a small regular file for reading
	// and rewriting in place: the fencing counter.
	OpenCounter(path string) (*os.File, error)
}

// OSFS is the real filesystem.
type OSFS struct{}

func (OSFS) Mkdir(path string, perm fs.FileMode) error { return os.Mkdir(path, perm) }
func (OSFS) Lstat(path string) (fs.FileInfo, error)    { return os.Lstat(path) }
func (OSFS) Link(oldpath, newpath string) error        { return os.Link(oldpath, newpath) }
func (OSFS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (OSFS) Remove(path string) error                  { return os.Remove(path) }
