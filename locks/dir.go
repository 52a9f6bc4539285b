package locks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// DefaultTTL is the lock's lifetime without renewal when nothing says else.
const DefaultTTL = 30 * time.Second

// ResolveDir picks the lock directory: flag > WITHLOCK_DIR >
// NEXUSCORE_RUN_LOCK_DIR (the seed's variable) > $XDG_RUNTIME_DIR/withlock >
// /tmp/withlock-<uid>.
func ResolveDir(flag string, getenv func(string) string) string {
	for _, v := range []string{flag, getenv("WITHLOCK_DIR"), getenv("NEXUSCORE_RUN_LOCK_DIR")} {
		if v != "" {
			return v
		}
	}
	if x := getenv("XDG_RUNTIME_DIR"); x != "" {
		return filepath.Join(x, "withlock")
	}
	return filepath.Join(os.TempDir(), "withlock-"+strconv.Itoa(os.Geteuid()))
}

// ResolveTTL picks the TTL: flag > WITHLOCK_TTL (a Go duration, or bare
// seconds) > NEXUSCORE_RUN_LOCK_TTL_SECONDS (integer seconds) > 30s.
// The result must be positive.
func ResolveTTL(flag time.Duration, getenv func(string) string) (time.Duration, error) {
	if flag != 0 {
		if flag < 0 {
			return 0, fmt.Errorf("ttl %v: must be positive", flag)
		}
		return flag, nil
	}
	if v := getenv("WITHLOCK_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			n, nerr := strconv.Atoi(v)
			if nerr != nil {
				return 0, fmt.Errorf("WITHLOCK_TTL=%q: not a duration", v)
			}
			d = time.Duration(n) * time.Second
		}
		if d <= 0 {
			return 0, fmt.Errorf("WITHLOCK_TTL=%q: must be positive", v)
		}
		return d, nil
	}
	if v := getenv("NEXUSCORE_RUN_LOCK_TTL_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("NEXUSCORE_RUN_LOCK_TTL_SECONDS=%q: not a positive integer", v)
		}
		return time.Duration(n) * time.Second, nil
	}
	return DefaultTTL, nil
}

// EnsureDir creates dir 0700 if it is missing (its parents too) and refuses
// it when it is a symlink, not a directory, world-writable, or owned by a
// user other than us or root.
func EnsureDir(fsys FS, dir string) error {
	fi, err := fsys.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := mkdirAll(fsys, dir); err != nil {
			return err
		}
		fi, err = fsys.Lstat(dir)
	}
	if err != nil {
		return err
	}
	return checkDir(dir, fi)
}

func mkdirAll(fsys FS, dir string) error {
	parent := filepath.Dir(dir)
	if parent != dir {
		if _, err := fsys.Lstat(parent); errors.Is(err, fs.ErrNotExist) {
			if err := mkdirAll(fsys, parent); err != nil {
				return err
			}
		}
	}
	err := fsys.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

func checkDir(dir string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink", ErrUnsafeDir, dir)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	case fi.Mode().Perm()&0o002 != 0:
		return fmt.Errorf("%w: %s is world-writable", ErrUnsafeDir, dir)
	}
	if uid, ok := ownerUID(fi); ok && uid != os.Geteuid() && uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d", ErrUnsafeDir, dir, uid)
	}
	return nil
}
