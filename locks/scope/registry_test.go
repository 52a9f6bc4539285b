package scope

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestScopeFilePath(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	// The default is the run lock's default dir whatever the session's
	// variables say: cron has no XDG_RUNTIME_DIR or TMPDIR, a login shell
	// has both, and both must see one registry.
	uidDir := "/tmp/withlock-" + strconv.Itoa(os.Geteuid())
	if os.Geteuid() == 0 {
		uidDir = "/run/withlock"
	}
	tests := []struct {
		flag string
		env  func(string) string
		want string
	}{
		{"/f/scope.lock", env("WITHLOCK_SCOPE_FILE", "/e/scope.lock", "XDG_RUNTIME_DIR", "/run/user/1"), "/f/scope.lock"},
		{"", env("WITHLOCK_SCOPE_FILE", "/e/scope.lock", "XDG_RUNTIME_DIR", "/run/user/1"), "/e/scope.lock"},
		{"", env("XDG_RUNTIME_DIR", "/run/user/1", "TMPDIR", "/home/u/tmp"), filepath.Join(uidDir, "scope.lock")},
		{"", env("WITHLOCK_DIR", "/elsewhere"), filepath.Join(uidDir, "scope.lock")},
		{"", env(), filepath.Join(uidDir, "scope.lock")},
	}
	for _, tt := range tests {
		if got := FilePath(tt.flag, tt.env); got != tt.want {
			t.Errorf("FilePath(%q) = %q, want %q", tt.flag, got, tt.want)
		}
	}
}

func TestScopeRegistryPermissions(t *testing.T) {
	f, _ := newRegistry(t)
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	mustRegister(t, f, self(t).request("a", "/p:write"))
	assertMode(t, filepath.Dir(f.Path), 0o700)
	assertMode(t, f.Path, 0o600)

	// A registry left 0644 by someone else's writer is made 0600.
	if err := os.Chmod(f.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, f, self(t).request("b", "/q:write"))
	assertMode(t, f.Path, 0o600)

	// The backup of a rewrite that did not complete is 0600 too.
	crashMidRewrite(t, f, self(t).request("c", "/r:write"), func(b []byte) []byte { return b[:1] })
	assertMode(t, f.Path+".bak", 0o600)
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s mode %o, want %o", path, got, want)
	}
}

// TestScopeRegistryRefusesUnsafePlaces: never through a symlink, never in a
// world-writable directory or a file of another user.
func TestScopeRegistryRefusesUnsafePlaces(t *testing.T) {
	ctx := context.Background()
	req := self(t).request("a", "/p:write")

	t.Run("file symlink", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		if err := os.WriteFile(target, []byte("precious"), 0o600); err != nil {
			t.Fatal(err)
		}
		f := &Registry{Path: filepath.Join(dir, "scope.lock")}
		if err := os.Symlink(target, f.Path); err != nil {
			t.Fatal(err)
		}
		_, err := f.Register(ctx, req)
		if !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("register through a symlink = %v", err)
		}
		if data, _ := os.ReadFile(target); string(data) != "precious" {
			t.Fatalf("symlink target changed: %q", data)
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		dir := t.TempDir()
		f := &Registry{Path: filepath.Join(dir, "scope.lock")}
		if err := os.Symlink(filepath.Join(dir, "created-through-link"), f.Path); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Register(ctx, req); !errors.Is(err, ErrUnusable) {
			t.Fatalf("register = %v", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "created-through-link")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a file was created through the symlink: %v", err)
		}
	})
	t.Run("directory symlink", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "real"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
			t.Fatal(err)
		}
		f := &Registry{Path: filepath.Join(dir, "link", "scope.lock")}
		if _, err := f.Register(ctx, req); !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("register = %v", err)
		}
	})
	t.Run("world-writable directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "open")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		f := &Registry{Path: filepath.Join(dir, "scope.lock")}
		if _, err := f.Register(ctx, req); !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "world-writable") {
			t.Fatalf("register = %v", err)
		}
	})
	t.Run("not a regular file", func(t *testing.T) {
		dir := t.TempDir()
		f := &Registry{Path: filepath.Join(dir, "scope.lock")}
		if err := unix.Mkfifo(f.Path, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Register(ctx, req); !errors.Is(err, ErrUnusable) {
			t.Fatalf("register on a FIFO = %v", err)
		}
	})
	t.Run("file of another user", func(t *testing.T) {
		dir := t.TempDir()
		f := &Registry{Path: filepath.Join(dir, "scope.lock")}
		if err := os.WriteFile(f.Path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(f.Path, os.Geteuid()+1000, -1); err != nil {
			t.Skipf("cannot give a file to another user here: %v", err)
		}
		if _, err := f.Register(ctx, req); !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), "owned by uid") {
			t.Fatalf("register = %v", err)
		}
	})
}

// TestScopeRegistryRewritesInPlace: the inode never changes, so another
// program's flock on it stays meaningful; once the rewrite is on the
// device its backup is gone, and no temp file is left.
func TestScopeRegistryRewritesInPlace(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	mustRegister(t, f, me.request("a", "/a:write"))
	before := inodeOf(t, f.Path)
	mustRegister(t, f, me.request("b", "/b:write"))
	if inodeOf(t, f.Path) != before {
		t.Fatal("registry inode changed: it was replaced, not rewritten in place")
	}
	if _, err := os.Lstat(f.Path + ".bak"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("backup left after a completed rewrite: %v", err)
	}
	if leftovers, _ := filepath.Glob(f.Path + ".*tmp.*"); len(leftovers) > 0 {
		t.Fatalf("temp files left: %v", leftovers)
	}
}

// TestScopeTransformWithoutChangeWritesNothing: when fn fails or changes
// nothing the registry is not written, and no backup or temp file appears.
func TestScopeTransformWithoutChangeWritesNothing(t *testing.T) {
	f, _ := newRegistry(t)
	mustRegister(t, f, self(t).request("a", "/a:write"))
	mustRegister(t, f, self(t).request("b", "/b:write"))
	registry, _ := readFileString(f.Path)
	written := modTimeOf(t, f.Path)
	refused := errors.New("refused")
	for _, fn := range []func(*Table) error{
		func(*Table) error { return refused },
		func(*Table) error { return nil },
	} {
		if err := f.Transform(context.Background(), fn); err != nil && err != refused {
			t.Fatal(err)
		}
		if got, _ := readFileString(f.Path); got != registry || !modTimeOf(t, f.Path).Equal(written) {
			t.Fatalf("registry written:\n%s", got)
		}
		if leftovers, _ := filepath.Glob(f.Path + ".*"); len(leftovers) > 0 {
			t.Fatalf("files left beside the registry: %v", leftovers)
		}
	}
}

func modTimeOf(t *testing.T, path string) time.Time {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}

func inodeOf(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func TestScopeRegistryKeepsForeignFields(t *testing.T) {
	f, _ := newRegistry(t)
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	foreign := `{"allocations":[{"name":"pod1","pid":` + strconv.Itoa(os.Getpid()) +
		`,"socket":"/run/pod1.sock","scope_allow":["/pods/one:write:recursive"],"delegated_from":null,"pod_kind":"spawner"}],"schema":"insomnia/1"}`
	if err := os.WriteFile(f.Path, []byte(foreign), 0o600); err != nil {
		t.Fatal(err)
	}
	a := mustRegister(t, f, self(t).request("", "/mine:write"))
	if err := f.Release(context.Background(), a.Name, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	data, _ := readFileString(f.Path)
	for _, want := range []string{`"schema":"insomnia/1"`, `"pod_kind":"spawner"`, `"name":"pod1"`, `"socket":"/run/pod1.sock"`} {
		if !strings.Contains(data, want) {
			t.Errorf("registry lost %s:\n%s", want, data)
		}
	}
}

// crashMidRewrite registers q and stops the registering goroutine inside
// the in-place rewrite, after the truncate and cut bytes of the new content
// — as a crash or a full disk would leave it: the flock goes with the
// descriptor, the torn registry and the backup of the rewrite stay.
func crashMidRewrite(t *testing.T, f *Registry, q Request, cut func([]byte) []byte) {
	t.Helper()
	f.FS = &faultFS{rewrite: func(file *os.File, data []byte) error {
		file.Truncate(0)
		file.WriteAt(cut(data), 0)
		runtime.Goexit()
		return nil
	}}
	defer func() { f.FS = nil }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.Register(context.Background(), q)
		t.Error("the rewrite was not interrupted")
	}()
	<-done
}

// TestScopeRegistryRestoresTornRewrite: a rewrite cut short leaves a prefix
// of the new content (or nothing, right after the truncate) beside its
// backup; the next opener restores exactly that new state — the allocation
// being written included — says so, and goes on.
func TestScopeRegistryRestoresTornRewrite(t *testing.T) {
	for _, tear := range []struct {
		name string
		cut  func([]byte) []byte
	}{
		{"prefix", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"all but the newline", func(b []byte) []byte { return b[:len(b)-1] }},
	} {
		t.Run(tear.name, func(t *testing.T) {
			f, logs := newRegistry(t)
			me := self(t)
			mustRegister(t, f, me.request("first", "/first:write"))
			mustRegister(t, f, me.request("second", "/second:write"))
			crashMidRewrite(t, f, me.request("third", "/third:write"), tear.cut)
			if _, err := os.Lstat(f.Path + ".bak"); err != nil {
				t.Fatalf("no backup beside the torn registry: %v", err)
			}
			mustRegister(t, f, me.request("fourth", "/fourth:write"))
			if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"first", "second", "third", "fourth"}) {
				t.Fatalf("allocations %v", got)
			}
			if tear.name != "all but the newline" && !strings.Contains(logs.String(), "restored from its backup") {
				t.Errorf("restore not logged: %s", logs)
			}
			// The restored third still holds its scope.
			if _, err := f.Register(context.Background(), me.request("over-third", "/third:write")); !errors.Is(err, ErrConflict) {
				t.Fatalf("a writer over the restored allocation: %v, want a conflict", err)
			}
		})
	}
}

// TestScopeRegistryNeverRestoresWhatIsNotProvablyLatest: a registry torn or
// emptied by another writer — no backup, a backup it is no prefix of, a
// backup older than the registry's last write — is ErrCorrupt naming the
// file and `withlock break --scopes`, and left as it is: never is a writer
// admitted over the allocations it held.
func TestScopeRegistryNeverRestoresWhatIsNotProvablyLatest(t *testing.T) {
	type state struct{ registry, backup []byte }
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, f *Registry, good []byte)
	}{
		{"torn by another writer, no backup", func(t *testing.T, f *Registry, good []byte) {
			writeKeepingInode(t, f.Path, good[:len(good)/2])
		}},
		{"emptied by another writer, no backup", func(t *testing.T, f *Registry, good []byte) {
			writeKeepingInode(t, f.Path, nil)
		}},
		{"garbage beside a backup", func(t *testing.T, f *Registry, good []byte) {
			crashMidRewrite(t, f, self(t).request("third", "/third:write"), func([]byte) []byte { return []byte("\x00\x00") })
		}},
		{"another writer's torn rewrite beside an older backup", func(t *testing.T, f *Registry, good []byte) {
			crashMidRewrite(t, f, self(t).request("third", "/third:write"), func(b []byte) []byte { return b[:len(b)/2] })
			old := time.Now().Add(-time.Minute)
			if err := os.Chtimes(f.Path+".bak", old, old); err != nil {
				t.Fatal(err)
			}
			bak, _ := os.ReadFile(f.Path + ".bak")
			writeKeepingInode(t, f.Path, bak[:len(bak)/3])
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newRegistry(t)
			me := self(t)
			mustRegister(t, f, me.request("first", "/first:write"))
			mustRegister(t, f, me.request("second", "/second:write"))
			good, _ := os.ReadFile(f.Path)
			tt.damage(t, f, good)
			damaged, _ := os.ReadFile(f.Path)
			_, err := f.Register(context.Background(), me.request("over-second", "/second:write"))
			if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrUnusable) {
				t.Fatalf("register over the damaged registry = %v, want ErrCorrupt", err)
			}
			for _, want := range []string{f.Path, "withlock break --scopes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if got, _ := os.ReadFile(f.Path); !bytes.Equal(got, damaged) {
				t.Fatalf("damaged registry changed to %q", got)
			}
		})
	}
}

// writeKeepingInode rewrites path in place, as another program following
// the seed's protocol does (under the flock, which it then drops).
func writeKeepingInode(t *testing.T, path string, data []byte) {
	t.Helper()
	file := flockFile(t, path)
	defer file.Close()
	if err := file.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := file.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
}

// TestScopeRegistryEmptyNewFileIsNew: an empty file that was never written
// since it was created (another program's fresh registry, `touch`) is an
// empty registry.
func TestScopeRegistryEmptyNewFileIsNew(t *testing.T) {
	f, _ := newRegistry(t)
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.Path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, f, self(t).request("a", "/a:write"))
}

// TestScopeRegistryCorruptWithoutBackup: never silently emptied — an error
// naming the file and the way out, the file untouched.
func TestScopeRegistryCorruptWithoutBackup(t *testing.T) {
	for _, content := range []string{`{"allocations": [{"name": "a", "pi`, `{"allocations": "nope"}`} {
		f, _ := newRegistry(t)
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := f.Register(context.Background(), self(t).request("a", "/a:write"))
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ErrUnusable) {
			t.Fatalf("register = %v, want ErrCorrupt", err)
		}
		for _, want := range []string{f.Path, "withlock break --scopes"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if got, _ := readFileString(f.Path); got != content {
			t.Errorf("corrupt registry changed to %q", got)
		}
		if _, err := os.Lstat(f.Path + ".bak"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a backup appeared: %v", err)
		}
		if _, err := f.Status(context.Background()); !errors.Is(err, ErrCorrupt) {
			t.Errorf("status = %v, want ErrCorrupt", err)
		}
	}
}

func TestScopeResetMovesCorruptRegistryAside(t *testing.T) {
	f, _ := newRegistry(t)
	f.Now = func() time.Time { return time.Unix(1700000000, 0) }
	ctx := context.Background()
	if moved, err := f.Reset(ctx); err != nil || moved != nil {
		t.Fatalf("reset of a missing registry = %v, %v", moved, err)
	}
	mustRegister(t, f, self(t).request("a", "/a:write"))
	if moved, err := f.Reset(ctx); err != nil || moved != nil {
		t.Fatalf("reset of a healthy registry = %v, %v", moved, err)
	}
	for round, want := range []string{f.Path + ".corrupt.1700000000", f.Path + ".corrupt.1700000000.1"} {
		corrupt := "{torn " + strconv.Itoa(round)
		if err := os.WriteFile(f.Path, []byte(corrupt), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.Path+".bak", []byte("{also torn"), 0o600); err != nil {
			t.Fatal(err)
		}
		moved, err := f.Reset(ctx)
		if err != nil || len(moved) != 2 || moved[0] != want {
			t.Fatalf("round %d: reset = %v, %v; want %s first", round, moved, err, want)
		}
		if got, _ := readFileString(want); got != corrupt {
			t.Fatalf("moved-aside content %q, want %q", got, corrupt)
		}
		mustRegister(t, f, self(t).request("fresh", "/fresh:write"))
		if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"fresh"}) {
			t.Fatalf("after reset: %v", got)
		}
	}
}

// TestScopeRegistryBusy: a holder that keeps the flock (a stopped process)
// makes the wait end at its bound with ErrBusy naming the file; a
// cancelled context ends it at once.
func TestScopeRegistryBusy(t *testing.T) {
	defer goleak.VerifyNone(t)
	f, _ := newRegistry(t)
	mustRegister(t, f, self(t).request("a", "/a:write"))
	stuck := flockFile(t, f.Path)
	defer stuck.Close()

	f.LockWait = 150 * time.Millisecond
	_, err := f.Register(context.Background(), self(t).request("b", "/b:write"))
	if !errors.Is(err, ErrBusy) || !errors.Is(err, ErrUnusable) || !strings.Contains(err.Error(), f.Path) {
		t.Fatalf("register = %v, want ErrBusy naming %s", err, f.Path)
	}

	f.LockWait = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.Register(ctx, self(t).request("c", "/c:write"))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("register = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled wait did not end")
	}
}

func flockFile(t *testing.T, path string) *os.File {
	t.Helper()
	file, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(file.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestScopeRegistryWaiterFollowsMovedFile: a waiter whose flock is granted
// on a registry that was moved aside meanwhile (by reset) works on the file
// now at the path, never on the orphan.
func TestScopeRegistryWaiterFollowsMovedFile(t *testing.T) {
	defer goleak.VerifyNone(t)
	f, _ := newRegistry(t)
	mustRegister(t, f, self(t).request("old", "/old:write"))
	stuck := flockFile(t, f.Path)

	done := make(chan error, 1)
	go func() {
		_, err := f.Register(context.Background(), self(t).request("new", "/new:write"))
		done <- err
	}()
	waitForFlockWaiter(t, f.Path)
	aside := f.Path + ".corrupt.test"
	if err := os.Rename(f.Path, aside); err != nil {
		t.Fatal(err)
	}
	orphan, _ := readFileString(aside)
	stuck.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := readFileString(aside); got != orphan {
		t.Fatal("the moved-aside registry was written to")
	}
	if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("allocations %v", got)
	}
}

// waitForFlockWaiter waits until the waiting goroutine has the registry
// open: a second descriptor of this process on its inode.
func waitForFlockWaiter(t *testing.T, path string) {
	t.Helper()
	ino := inodeOf(t, path)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if openCount(ino) >= 2 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the waiter never opened the registry")
}

func openCount(ino uint64) int {
	fds, _ := filepath.Glob("/proc/self/fd/*")
	n := 0
	for _, fd := range fds {
		var st unix.Stat_t
		if unix.Stat(fd, &st) == nil && st.Ino == ino {
			n++
		}
	}
	return n
}

// TestScopeResetMovesUnreadableBackupAside: a backup that cannot be read
// (here a symlink, which is never followed) is no good backup either. Left
// in place it would make every later start — on the fresh, empty registry
// — fail as corrupt again, so reset moves it aside with the registry.
func TestScopeResetMovesUnreadableBackupAside(t *testing.T) {
	f, _ := newRegistry(t)
	f.Now = func() time.Time { return time.Unix(1700000000, 0) }
	mustRegister(t, f, self(t).request("a", "/a:write"))
	if err := os.WriteFile(f.Path, []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "good.json")
	if err := os.WriteFile(good, (&Table{}).Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(f.Path + ".bak")
	if err := os.Symlink(good, f.Path+".bak"); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := f.Register(ctx, self(t).request("b", "/b:write")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("register = %v, want ErrCorrupt", err)
	}
	moved, err := f.Reset(ctx)
	if err != nil || len(moved) != 2 {
		t.Fatalf("reset = %v, %v; want the registry and the backup moved", moved, err)
	}
	mustRegister(t, f, self(t).request("fresh", "/fresh:write"))
	if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("after reset: %v", got)
	}
}
