package scope

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/locks/filelock"
)

// maxReopen bounds how often the registry is reopened because the path
// named another file by the time its flock was granted (moved aside by
// reset meanwhile).
const maxReopen = 8

// openLocked opens the registry safely and takes its flock within the
// bound. The directory must be ours (or root's), not world-writable and not
// a symlink; the file must be a regular file of ours, opened without
// following a symlink, and is made 0600. The flock is on the inode, so once
// it is granted the path must still name that inode — else the registry
// was moved aside meanwhile and the new one is opened.
func (f *Registry) openLocked(ctx context.Context, create bool) (*os.File, error) {
	if err := f.checkDir(create); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(f.lockWait())
	for range maxReopen {
		file, err := f.openChecked(create)
		if err != nil {
			return nil, err
		}
		if err := f.flock(ctx, file, deadline); err != nil {
			file.Close()
			return nil, err
		}
		same, err := namesFile(f.Path, file)
		if err == nil && same {
			return file, nil
		}
		file.Close()
		if err != nil {
			return nil, unusable(err)
		}
	}
	return nil, fmt.Errorf("%w: %s keeps being replaced", ErrBusy, f.Path)
}

func (f *Registry) checkDir(create bool) error {
	dir := filepath.Dir(f.Path)
	if !create {
		if _, err := f.fs().Lstat(dir); err != nil {
			return err // fs.ErrNotExist: no registry yet
		}
	}
	if err := filelock.EnsureDir(f.fs(), dir); err != nil {
		return unusable(fmt.Errorf("scope registry directory: %w", err))
	}
	return nil
}

func (f *Registry) openChecked(create bool) (*os.File, error) {
	file, err := f.fs().OpenRegistry(f.Path)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = f.create(); err == nil {
			file, err = f.fs().OpenRegistry(f.Path)
		}
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, unusable(fmt.Errorf("scope registry %s is a symlink: refused", f.Path))
	case errors.Is(err, fs.ErrNotExist) && !create:
		return nil, err
	case err != nil:
		return nil, unusable(err)
	}
	if err := checkRegistryFile(file); err != nil {
		file.Close()
		return nil, unusable(err)
	}
	return file, nil
}

// create puts an empty registry at Path — whole, never an empty file,
// which load would have to take for one emptied by a writer — unless
// another process just did (EEXIST is no error).
func (f *Registry) create() error {
	tmp := f.Path + ".tmp." + randomName()
	if err := f.fs().WriteNew(tmp, (&Table{}).Encode(), 0o600); err != nil {
		return err
	}
	defer f.fs().Remove(tmp)
	if err := f.fs().Link(tmp, f.Path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// checkRegistryFile refuses anything but a regular file of ours and makes
// it 0600 (seed 004's review: the mode is set explicitly, not left to the
// umask or to whoever created the file).
func checkRegistryFile(file *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: file.Name(), Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("scope registry %s is not a regular file: refused", file.Name())
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("scope registry %s is owned by uid %d: refused", file.Name(), st.Uid)
	case st.Mode&0o7777 != 0o600:
		if err := file.Chmod(0o600); err != nil {
			return err
		}
	}
	return nil
}

// flock takes LOCK_EX, polling LOCK_NB with a sleep that grows to 20ms:
// flock(2) has no timed form, and a blocked flock in a goroutine could not
// be abandoned. Past the deadline it is ErrBusy; a cancelled ctx
// ends the wait at once.
func (f *Registry) flock(ctx context.Context, file *os.File, deadline time.Time) error {
	for pause := 200 * time.Microsecond; ; pause = min(2*pause, 20*time.Millisecond) {
		err := unix.Flock(int(file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR):
			return unusable(&fs.PathError{Op: "flock", Path: f.Path, Err: err})
		case time.Now().After(deadline):
			return fmt.Errorf("%w: flock on %s not granted within %v (a stopped process may hold it)",
				ErrBusy, f.Path, f.lockWait())
		}
		// ±25% jitter, so that waiters on one registry do not wake in step.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause*3/4 + rand.N(pause/2+1)):
		}
	}
}

// namesFile reports whether path still names the open file.
func namesFile(path string, file *os.File) (bool, error) {
	open, err := file.Stat()
	if err != nil {
		return false, err
	}
	named, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil && os.SameFile(open, named), err
}

// neverWritten reports whether the open file was never modified since it
// was created: its birth time is its modification time, to the
// nanosecond. A file created empty by another program that follows the
// seed's protocol is a new registry; one that held allocations and was
// truncated is not. Where the filesystem keeps no birth time it cannot
// tell, and says no.
func neverWritten(file *os.File) bool {
	var stx unix.Statx_t
	if err := unix.Statx(int(file.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_BTIME|unix.STATX_MTIME, &stx); err != nil {
		return false
	}
	return stx.Mask&unix.STATX_BTIME != 0 && stx.Btime == stx.Mtime
}

// stampOf is the stamp of a file as file.Stat or os.Lstat describes it.
func stampOf(fi fs.FileInfo, err error) (Stamp, bool) {
	if err != nil {
		return Stamp{}, false
	}
	st := fi.Sys().(*syscall.Stat_t)
	return Stamp{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}, true
}
