package fsys

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// ReadLockFile reads files whose size stat does not know (procfs reports 0)
// whole, short and long ones, and still caps a regular file at limit+1.
func TestReadLockFileSizelessAndCapped(t *testing.T) {
	boot, _, err := OS{}.ReadLockFile("/proc/sys/kernel/random/boot_id", 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.TrimSpace(boot)) != 36 {
		t.Fatalf("boot id %q, want 36 characters", boot)
	}
	// Longer than the first buffer: /proc/self/limits, about 1.3 KB and
	// stable while the process runs.
	want, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := OS{}.ReadLockFile("/proc/self/limits", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= 512 || !bytes.Equal(got, want) {
		t.Fatalf("limits: read %d bytes, want the %d os.ReadFile reads", len(got), len(want))
	}
	capped, _, err := OS{}.ReadLockFile("/proc/self/limits", 100)
	if err != nil || len(capped) != 101 {
		t.Fatalf("limit 100: %d bytes (%v), want 101", len(capped), err)
	}

	path := filepath.Join(t.TempDir(), "big.lock")
	if err := os.WriteFile(path, bytes.Repeat([]byte("y"), 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _, err := (OS{}).ReadLockFile(path, 4096); err != nil || len(data) != 4097 {
		t.Fatalf("regular file over the limit: %d bytes (%v), want 4097", len(data), err)
	}
	empty := filepath.Join(t.TempDir(), "empty.lock")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _, err := (OS{}).ReadLockFile(empty, 4096); err != nil || len(data) != 0 {
		t.Fatalf("empty file: %q (%v)", data, err)
	}
}

// ReadLockFile stops at a regular file's end without a read to hear so;
// every size around the first buffer's (512 bytes and one more) and a
// few buffers long still reads whole.
func TestReadLockFileRegularSizes(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{1, 320, 511, 512, 513, 1025, 4096} {
		want := bytes.Repeat([]byte("x"), size)
		path := filepath.Join(dir, "f.lock")
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, fi, err := OS{}.ReadLockFile(path, 4096)
		if err != nil || !bytes.Equal(got, want) || fi.Size() != int64(size) {
			t.Fatalf("size %d: read %d bytes (%v)", size, len(got), err)
		}
	}
}

// OpenCounter refuses what is not a regular file without blocking (a FIFO
// would block a plain open) and without following a symlink, and hands
// back a blocking descriptor that reads and writes in place.
func TestOpenCounterRegularOnlyAndBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.fence")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.fence")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, link, dir} {
		if f, err := (OS{}).OpenCounter(path); err == nil {
			f.Close()
			t.Errorf("%s: opened, want a refusal", path)
		}
	}

	path := filepath.Join(dir, "run.fence")
	f, err := OS{}.OpenCounter(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("flags %#x (%v): want a blocking descriptor", flags, err)
	}
	if _, err := f.WriteAt([]byte("00000000000000000042\n"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	if string(buf[:n]) != "00000000000000000042\n" {
		t.Fatalf("read back %q", buf[:n])
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created %v (%v), want mode 0600", fi, err)
	}
}

// OpenTree hands back a blocking descriptor, made or opened, with the
// mode asked for, and refuses to follow a symlink: the command inherits
// it and may read or write it like any file it was given.
func TestOpenTreeBlockingNoFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.tree.abc")
	for _, create := range []bool{true, false} {
		f, err := OS{}.OpenTree(path, create, 0o644)
		if err != nil {
			t.Fatalf("create=%v: %v", create, err)
		}
		flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		f.Close()
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			t.Fatalf("create=%v: flags %#x (%v): want a blocking descriptor", create, flags, err)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("created %v (%v), want mode 0644", fi, err)
	}
	if f, err := (OS{}).OpenTree(path, true, 0o644); !errors.Is(err, fs.ErrExist) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("create over an existing tree file: %v, want fs.ErrExist", err)
	}
	link := filepath.Join(dir, "link.tree")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if f, err := (OS{}).OpenTree(link, false, 0); err == nil {
		f.Close()
		t.Fatal("opened a tree file through a symlink")
	}
}
