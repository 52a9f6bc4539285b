package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SPEC §3: the default lock dir is the same in every session of a user,
// whatever $XDG_RUNTIME_DIR or $TMPDIR say.
func TestDefaultDirIgnoresSessionVariables(t *testing.T) {
	env := map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "TMPDIR": "/var/tmp/x"}
	got := ResolveDir("", func(k string) string { return env[k] })
	want := "/tmp/withlock-" + itoa(uint64(os.Geteuid()))
	if os.Geteuid() == 0 {
		want = "/run/withlock"
	}
	if got != want || DefaultDir() != want {
		t.Errorf("ResolveDir = %q, DefaultDir = %q; want %q", got, DefaultDir(), want)
	}
}

// dirCase makes a directory for a check: mode, owner, or a symlink.
type dirCase struct {
	name    string
	make    func(t *testing.T, base string) string
	refused string // "" accepted; else a phrase of the refusal
}

func mkdirMode(t *testing.T, path string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

func symlinkOwned(t *testing.T, target, path string, uid int) string {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	return path
}

// Which directories the run lock takes (SPEC §3). Owners other than root
// need chown, so this runs as root (the integration suite repeats the
// shared-dir cases as uid 65534).
func TestLockDirSafety(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown the directories")
	}
	cases := []dirCase{
		{"private 0700", func(t *testing.T, b string) string { return mkdirMode(t, filepath.Join(b, "d"), 0o700, 0) }, ""},
		{"root-owned 0770", func(t *testing.T, b string) string { return mkdirMode(t, filepath.Join(b, "d"), 0o770, 0) }, "writable by its group (mode 0770, owner root)"},
		{"root-owned 0777", func(t *testing.T, b string) string { return mkdirMode(t, filepath.Join(b, "d"), 0o777, 0) }, "writable by group and others"},
		{"root-owned 1770", func(t *testing.T, b string) string {
			return mkdirMode(t, filepath.Join(b, "d"), 0o770|os.ModeSticky, 0)
		}, "writable by its group (mode 1770"},
		{"shared 1777 root", func(t *testing.T, b string) string {
			return mkdirMode(t, filepath.Join(b, "d"), 0o777|os.ModeSticky, 0)
		}, ""},
		{"1777 not root's", func(t *testing.T, b string) string {
			return mkdirMode(t, filepath.Join(b, "d"), 0o777|os.ModeSticky, 65534)
		}, "writable by all (mode 1777) but owned by uid 65534"},
		{"another user's 0700", func(t *testing.T, b string) string { return mkdirMode(t, filepath.Join(b, "d"), 0o700, 65534) }, "owned by uid 65534"},
		{"root symlink to shared", func(t *testing.T, b string) string {
			return symlinkOwned(t, mkdirMode(t, filepath.Join(b, "lock"), 0o777|os.ModeSticky, 0), filepath.Join(b, "l"), 0)
		}, ""},
		{"root symlink to private", func(t *testing.T, b string) string {
			return symlinkOwned(t, mkdirMode(t, filepath.Join(b, "lock"), 0o700, 0), filepath.Join(b, "l"), 0)
		}, "symlink to a dir that is not a root-owned sticky shared dir"},
		{"user's symlink to shared", func(t *testing.T, b string) string {
			return symlinkOwned(t, mkdirMode(t, filepath.Join(b, "lock"), 0o777|os.ModeSticky, 0), filepath.Join(b, "l"), 65534)
		}, "symlink owned by uid 65534"},
		{"dangling root symlink", func(t *testing.T, b string) string {
			return symlinkOwned(t, filepath.Join(b, "none"), filepath.Join(b, "l"), 0)
		}, "symlink to nothing usable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.make(t, t.TempDir())
			r := newTestLocker(t, dir, time.Minute)
			l, err := r.Acquire(context.Background(), "job", time.Minute)
			if c.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				l.Release()
				return
			}
			if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), c.refused) {
				t.Fatalf("err = %v; want ErrUnsafeDir saying %q", err, c.refused)
			}
			if !strings.Contains(err.Error(), dir) || strings.Contains(err.Error(), "\n") {
				t.Errorf("message %q does not name %s in one line", err, dir)
			}
			if _, err := os.Lstat(r.LockPath("job")); !os.IsNotExist(err) {
				t.Errorf("lock file in a refused dir: %v", err)
			}
		})
	}
}

// A private dir is created 0700 whatever the umask; the scope registry's
// EnsureDir still refuses a shared dir.
func TestEnsureDirPrivateOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a root-owned shared dir")
	}
	shared := mkdirMode(t, filepath.Join(t.TempDir(), "shared"), 0o777|os.ModeSticky, 0)
	if err := EnsureDir(osFS{}, shared); !errors.Is(err, ErrUnsafeDir) {
		t.Errorf("EnsureDir(shared) = %v, want ErrUnsafeDir", err)
	}
	if _, err := ensureLockDir(osFS{}, shared); err != nil {
		t.Errorf("ensureLockDir(shared) = %v", err)
	}
}
