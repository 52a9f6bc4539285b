package filelock

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
)

// ResolveDir picks the lock directory: flag > WITHLOCK_DIR >
// NEXUSCORE_RUN_LOCK_DIR (the seed's variable) > DefaultDir, made absolute:
// the child's WITHLOCK_LOCK_FILE must still name its lock after a cd.
func ResolveDir(flag string, getenv func(string) string) string {
	dir := cmp.Or(flag, getenv("WITHLOCK_DIR"), getenv("NEXUSCORE_RUN_LOCK_DIR"), DefaultDir())
	abs, _ := filepath.Abs(dir) // "" if the working directory is gone
	return cmp.Or(abs, dir)
}

// DefaultDir is the lock directory when nothing names one: /run/withlock
// for root, /tmp/withlock-<uid> for everyone else. It depends on nothing
// but the user, so a job started by cron or systemd (no $XDG_RUNTIME_DIR,
// often no $TMPDIR) and one started from a login shell (both set) take the
// same lock and see each other in status (SPEC §3).
func DefaultDir() string {
	uid := euid()
	if uid == 0 {
		return "/run/withlock"
	}
	return "/tmp/withlock-" + strconv.Itoa(uid)
}

// EnsureDir creates dir 0700 if it is missing (its parents too) and refuses
// it unless it is private: a directory, not a symlink, writable by no one
// but its owner, owned by us or root. The scope registry lives in one.
func EnsureDir(fsys FS, dir string) error {
	fi, err := lstatOrCreate(fsys, dir)
	if err != nil {
		return err
	}
	return checkPrivateDir(dir, fi)
}

// ensureLockDir is EnsureDir for the run lock, which also works in the
// shared directories flock users know (SPEC §3): a root-owned sticky
// directory writable by all (/run/lock, /tmp), reached directly or through
// a root-owned symlink (/var/lock). There every file is checked to be ours
// before it is changed (checkOwned). shared says it is such a directory.
func ensureLockDir(fsys FS, dir string) (shared bool, err error) {
	fi, err := lstatOrCreate(fsys, dir)
	if err != nil {
		return false, err
	}
	return fi.Mode()&fs.ModeSymlink != 0 || isShared(fi), checkLockDir(dir, fi)
}

func lstatOrCreate(fsys FS, dir string) (fs.FileInfo, error) {
	fi, err := fsys.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := mkdirAll(fsys, dir); err != nil {
			return nil, err
		}
		fi, err = fsys.Lstat(dir)
	}
	return fi, err
}

func mkdirAll(fsys FS, dir string) error {
	if parent := filepath.Dir(dir); parent != dir {
		if _, err := fsys.Lstat(parent); errors.Is(err, fs.ErrNotExist) {
			if err := mkdirAll(fsys, parent); err != nil {
				return err
			}
		}
	}
	if err := fsys.Mkdir(dir, 0o700); !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// checkReadDir is the check before reading a directory (status, gc):
// root may read any user's directory; others as the run lock checks it.
func checkReadDir(fsys FS, dir string) error {
	fi, err := fsys.Lstat(dir)
	if err != nil {
		return err
	}
	if euid() != 0 || fi.Mode()&fs.ModeSymlink != 0 {
		return checkLockDir(dir, fi)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	}
	return nil
}
