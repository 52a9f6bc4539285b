package scope

import (
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/fsys"
)

// FS is the filesystem the registry goes through: the lock layer's
// operations (internal/fsys) plus what it does with the open registry and
// its backup. Tests wrap OS to inject faults: EMFILE on open, ENOSPC or EIO
// on a write, a short write, a failing fsync.
type FS interface {
	fsys.FS
	// OpenRegistry opens an existing registry for reading and rewriting in
	// place, without following a symlink or blocking on a FIFO.
	OpenRegistry(path string) (*os.File, error)
	// ReadRegistry reads the open registry from its start, at most
	// limit+1 bytes (so a caller can tell an oversized one).
	ReadRegistry(f *os.File, limit int64) ([]byte, error)
	// Rewrite replaces the open registry's content in place: truncate,
	// one write, fsync.
	Rewrite(f *os.File, data []byte) error
	// WriteSynced creates path exclusively (no symlink followed) with
	// data and fsyncs it before it returns; on error nothing is left.
	WriteSynced(path string, data []byte, perm fs.FileMode) error
}

// OS is the real filesystem (WriteSynced is fsys.OS's). The zero value is
// ready to use.
type OS struct{ fsys.OS }

// OpenRegistry refuses a symlink in the last component (O_NOFOLLOW) and
// does not block on a FIFO planted at the path (O_NONBLOCK).
func (OS) OpenRegistry(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
}

func (OS) ReadRegistry(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, 0, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	return data, nil
}

func (OS) Rewrite(f *os.File, data []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return f.Sync()
}
