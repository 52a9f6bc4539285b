package filelock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks"
)

// faultFS fails chosen operations and counts attempts.
type faultFS struct {
	osFS
	mkdir, writeNew, link, renameNoReplace error
	calls                                  atomic.Int64
}

func (f *faultFS) Mkdir(p string, m fs.FileMode) error {
	f.calls.Add(1)
	if f.mkdir != nil {
		return &fs.PathError{Op: "mkdir", Path: p, Err: f.mkdir}
	}
	return f.osFS.Mkdir(p, m)
}

func (f *faultFS) WriteNew(p string, d []byte, m fs.FileMode) error {
	f.calls.Add(1)
	if f.writeNew != nil {
		return &fs.PathError{Op: "write", Path: p, Err: f.writeNew}
	}
	return f.osFS.WriteNew(p, d, m)
}

func (f *faultFS) OpenUnnamed(dir string, m fs.FileMode) (*os.File, error) {
	f.calls.Add(1)
	if f.writeNew != nil {
		return nil, &fs.PathError{Op: "write", Path: dir, Err: f.writeNew}
	}
	return f.osFS.OpenUnnamed(dir, m)
}

func (f *faultFS) LinkUnnamed(file *os.File, n string) error {
	f.calls.Add(1)
	if f.link != nil {
		return &os.LinkError{Op: "link", Old: file.Name(), New: n, Err: f.link}
	}
	return f.osFS.LinkUnnamed(file, n)
}

func (f *faultFS) Link(o, n string) error {
	f.calls.Add(1)
	if f.link != nil {
		return &os.LinkError{Op: "link", Old: o, New: n, Err: f.link}
	}
	return f.osFS.Link(o, n)
}

func (f *faultFS) RenameNoReplace(o, n string) error {
	f.calls.Add(1)
	if f.renameNoReplace != nil {
		return &os.LinkError{Op: "rename", Old: o, New: n, Err: f.renameNoReplace}
	}
	return f.osFS.RenameNoReplace(o, n)
}

// Faults that are not contention end the wait after a few attempts, even
// with --wait forever, with ErrUnavailable naming the path and OS error, and
// leave nothing behind.
func TestFaultsAreBoundedAndClean(t *testing.T) {
	cases := []struct {
		name  string
		fault func(*faultFS)
		stale bool // a stale lock waits to be reclaimed
		want  error
	}{
		{"mkdir always fails", func(f *faultFS) { f.mkdir = syscall.EACCES }, false, syscall.EACCES},
		{"payload write fails", func(f *faultFS) { f.writeNew = syscall.ENOSPC }, false, syscall.ENOSPC},
		{"link fails", func(f *faultFS) { f.link = syscall.EROFS }, false, syscall.EROFS},
		{"rename aside fails", func(f *faultFS) { f.renameNoReplace = syscall.EACCES }, true, syscall.EACCES},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			r := newTestLocker(t, dir, time.Minute)
			var stalePayload []byte
			if tc.stale {
				os.Mkdir(dir, 0o700)
				writeLockFile(t, r.LockPath("job"), locks.Payload{LockID: "old", Pid: 1, ExpiresAt: 1}, time.Time{})
				stalePayload, _ = os.ReadFile(r.LockPath("job"))
			}
			f := &faultFS{}
			tc.fault(f)
			r.FS = f
			start := time.Now()
			_, err := r.Acquire(context.Background(), "job", -1)
			if !errors.Is(err, locks.ErrUnavailable) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v; want ErrUnavailable wrapping %v", err, tc.want)
			}
			if el := time.Since(start); el > 5*time.Second {
				t.Fatalf("gave up after %v", el)
			}
			if n := f.calls.Load(); n > 6*maxFaults {
				t.Fatalf("%d filesystem calls: the loop is not bounded", n)
			}
			t.Logf("gave up after %v, %d calls: %v", time.Since(start).Round(time.Millisecond), f.calls.Load(), err)
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				switch filepath.Ext(e.Name()) {
				case ".guard", ".fence":
					continue
				}
				if tc.stale && e.Name() == locks.Key("job")+".lock" {
					if data, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(data) == string(stalePayload) {
						continue
					}
				}
				t.Errorf("left behind: %s", e.Name())
			}
		})
	}
}

func TestUnsafeDirRefused(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	os.Mkdir(real, 0o700)
	link := filepath.Join(base, "link")
	os.Symlink(real, link)
	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	notDir := filepath.Join(base, "file")
	os.WriteFile(notDir, nil, 0o600)
	cases := map[string]string{"symlink": link, "world-writable": open, "not a directory": notDir}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		os.Chown(other, 65534, 65534)
		cases["owned by another user"] = other
	}
	for name, dir := range cases {
		t.Run(name, func(t *testing.T) {
			r := newTestLocker(t, dir, time.Minute)
			start := time.Now()
			_, err := r.Acquire(context.Background(), "job", time.Minute)
			if !errors.Is(err, locks.ErrUnavailable) || !errors.Is(err, ErrUnsafeDir) {
				t.Fatalf("err = %v, want ErrUnsafeDir", err)
			}
			if time.Since(start) > 2*time.Second {
				t.Fatal("an unsafe dir was retried")
			}
		})
	}
}

// A read-only directory (real EACCES for an unprivileged user; as root the
// check runs through setpriv in the integration suite) is covered above
// with an injected fault; here the real filesystem path: the parent of the
// lock dir is a file, so mkdir fails with ENOTDIR on every attempt.
func TestPersistentENOTDIR(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	r := newTestLocker(t, filepath.Join(file, "locks"), time.Minute)
	_, err := r.Acquire(context.Background(), "job", -1)
	if !errors.Is(err, locks.ErrUnavailable) || !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("err = %v", err)
	}
}

func TestResolveDirAndTTL(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	dirs := []struct {
		flag string
		env  map[string]string
		want string
	}{
		{"/f", map[string]string{"WITHLOCK_DIR": "/w"}, "/f"},
		{"", map[string]string{"WITHLOCK_DIR": "/w", "NEXUSCORE_RUN_LOCK_DIR": "/n"}, "/w"},
		{"", map[string]string{"NEXUSCORE_RUN_LOCK_DIR": "/n", "XDG_RUNTIME_DIR": "/x"}, "/n"},
		{"", map[string]string{"XDG_RUNTIME_DIR": "/x"}, DefaultDir()},
		{"", map[string]string{}, DefaultDir()},
		// Relative: made absolute, so that a child that changes directory
		// still finds its WITHLOCK_LOCK_FILE.
		{"locks/", nil, filepath.Join(wd, "locks")},
		{"", map[string]string{"WITHLOCK_DIR": "../w"}, filepath.Join(filepath.Dir(wd), "w")},
	}
	for _, d := range dirs {
		if got := ResolveDir(d.flag, env(d.env)); got != d.want {
			t.Errorf("ResolveDir(%q, %v) = %q, want %q", d.flag, d.env, got, d.want)
		}
	}
	ttls := []struct {
		flag time.Duration
		env  map[string]string
		want time.Duration
		bad  bool
	}{
		{5 * time.Second, map[string]string{"WITHLOCK_TTL": "9s"}, 5 * time.Second, false},
		{0, map[string]string{"WITHLOCK_TTL": "9s", "NEXUSCORE_RUN_LOCK_TTL_SECONDS": "3"}, 9 * time.Second, false},
		{0, map[string]string{"WITHLOCK_TTL": "12"}, 12 * time.Second, false},
		{0, map[string]string{"NEXUSCORE_RUN_LOCK_TTL_SECONDS": "3"}, 3 * time.Second, false},
		{0, map[string]string{}, locks.DefaultTTL, false},
		{-time.Second, nil, 0, true},
		{0, map[string]string{"WITHLOCK_TTL": "0s"}, 0, true},
		{0, map[string]string{"WITHLOCK_TTL": "soon"}, 0, true},
		{0, map[string]string{"NEXUSCORE_RUN_LOCK_TTL_SECONDS": "1.5"}, 0, true},
	}
	for _, c := range ttls {
		got, err := locks.ResolveTTL(c.flag, env(c.env))
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ResolveTTL(%v, %v) = %v, %v", c.flag, c.env, got, err)
		}
	}
}

// Hostile files at the lock path are never followed, opened as FIFOs or
// moved: a clear error, bounded, and the victim untouched.
func TestHostileLockPath(t *testing.T) {
	plant := map[string]func(path, victim string) error{
		"symlink":   func(p, v string) error { return os.Symlink(v, p) },
		"directory": func(p, v string) error { return os.Mkdir(p, 0o700) },
		"fifo":      func(p, v string) error { return syscall.Mkfifo(p, 0o600) },
	}
	for name, mk := range plant {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(victim, []byte("precious"), 0o600)
			r := newTestLocker(t, dir, time.Minute)
			if err := mk(r.LockPath("job"), victim); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := r.Acquire(context.Background(), "job", time.Minute); done <- err }()
			if err := testwait.Recv(t, done, 10*time.Second, "acquire on a hostile lock path"); !errors.Is(err, locks.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if data, _ := os.ReadFile(victim); string(data) != "precious" {
				t.Fatal("victim changed")
			}
		})
	}
}

// A holder that keeps its lock makes a waiter block, not spin: over a
// second of waiting only a handful of attempts happen.
func TestWaitingDoesNotSpin(t *testing.T) {
	dir := t.TempDir()
	holder := newTestLocker(t, dir, time.Minute)
	mustAcquire(t, holder, "job")
	w := newTestLocker(t, dir, time.Minute)
	f := &faultFS{}
	w.FS = f
	_, err := w.Acquire(context.Background(), "job", 1500*time.Millisecond)
	if !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("err = %v", err)
	}
	if n := f.calls.Load(); n > 10 {
		t.Fatalf("%d attempts in 1.5 s of waiting", n)
	}
}

// The waiter wakes when the lock file goes away and when a local holder
// dies without releasing (its lock then reclaimed as dead), well before any
// TTL: the locks below have a one-hour TTL. The first holder keeps the hold
// (hold.go), so its release wakes the waiter through the hold's flock; the
// second lock, written by hand, has none, and the waiter watches the
// directory and the holder's pidfd.
// waiting makes r report, once, that it is about to wait for a held lock
// (OnWait runs just before each wait), so a test can act on a waiter that
// is really waiting instead of sleeping and hoping.
func waiting(r *RunLocker) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	r.OnWait = func(*locks.Holder, time.Duration) { once.Do(func() { close(ch) }) }
	return ch
}

// eventWake bounds how long a woken waiter may take: well under the ~5 s
// safety poll of a watching waiter (at least 3.75 s with its jitter), so
// passing proves the wake came from the event (inotify, pidfd, the hold's
// grant), not from polling. A queued waiter polls every ~1 s: tests that
// bound its wake set its holdPoll far off.
const eventWake = 3 * time.Second

func TestWaitWakesOnReleaseAndOnHolderDeath(t *testing.T) {
	dir := t.TempDir()
	holder := newTestLocker(t, dir, time.Hour)
	l := mustAcquire(t, holder, "job")
	w := newTestLocker(t, dir, time.Hour)
	knobsOf(w).holdPoll = time.Hour // only the hold's grant can wake a queued waiter in time
	got := make(chan error, 1)
	acquire := func() {
		l2, err := w.Acquire(context.Background(), "job", time.Minute)
		if err == nil {
			l2.Release()
		}
		got <- err
	}
	isWaiting := waiting(w)
	go acquire()
	waitClosed(t, isWaiting, "the waiter to wait")
	released := time.Now()
	l.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(released); d > eventWake {
		t.Fatalf("the waiter took %v after the release: woken by its poll, not by the hold", d)
	}

	// A holder process on this host that dies: a payload naming a child we
	// then kill.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, _ := proc.StartTime(cmd.Process.Pid)
	self, _ := SelfIdentity()
	writeLockFile(t, w.LockPath("job"), locks.Payload{RunID: "job", LockID: "child", Pid: cmd.Process.Pid, PidStart: start,
		ExpiresAt: locks.Epoch(time.Now().Add(time.Hour)), Host: self.Host, BootID: self.BootID, PidNS: self.PidNS}, time.Time{})
	isWaiting = waiting(w)
	go acquire()
	waitClosed(t, isWaiting, "the waiter to wait for the child's lock")
	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	if err := testwait.Recv(t, got, 30*time.Second, "the waiter to take the dead holder's lock"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(killed); d > eventWake {
		t.Fatalf("the waiter took %v after the holder died: woken by its poll, not by the pidfd", d)
	}
}

func TestDeletedDirRecreatedWhileWaiting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	holder := newTestLocker(t, dir, time.Hour)
	mustAcquire(t, holder, "job")
	w := newTestLocker(t, dir, time.Hour)
	got := make(chan error, 1)
	var mode fs.FileMode
	isWaiting := waiting(w)
	go func() {
		l, err := w.Acquire(context.Background(), "job", time.Minute)
		if err == nil {
			if fi, serr := os.Stat(dir); serr == nil {
				mode = fi.Mode().Perm()
			}
			l.Release()
		}
		got <- err
	}()
	waitClosed(t, isWaiting, "the waiter to wait")
	// The waiter may be creating its guard file while the tree goes: retry
	// until one RemoveAll sees it through (as a teardown's rm -rf would).
	deadline := time.Now().Add(10 * time.Second)
	for err := os.RemoveAll(dir); err != nil; err = os.RemoveAll(dir) {
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if err := testwait.Recv(t, got, 30*time.Second, "the waiter to recover from the deleted directory"); err != nil {
		t.Fatal(err)
	}
	if mode != 0o700 {
		t.Fatalf("recreated dir mode %v, want 0700", mode)
	}
}

func TestContextAbortsWait(t *testing.T) {
	dir := t.TempDir()
	mustAcquire(t, newTestLocker(t, dir, time.Hour), "job")
	w := newTestLocker(t, dir, time.Hour)
	cause := errors.New("interrupted")
	ctx, cancel := context.WithCancelCause(context.Background())
	got := make(chan error, 1)
	isWaiting := waiting(w)
	go func() { _, err := w.Acquire(ctx, "job", -1); got <- err }()
	waitClosed(t, isWaiting, "the waiter to wait")
	cancel(cause)
	if err := testwait.Recv(t, got, 5*time.Second, "cancel to abort the wait"); !errors.Is(err, cause) {
		t.Fatalf("err = %v", err)
	}
}
