package scope

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// faultFS is the real filesystem with the faults a test sets: an error
// from an operation, or a Rewrite of its own.
type faultFS struct {
	OS
	mu          sync.Mutex
	openErr     error                               // OpenRegistry
	readErr     error                               // ReadRegistry
	backupErr   error                               // ReadLockFile of the backup
	syncedErr   error                               // WriteSynced
	rewrite     func(f *os.File, data []byte) error // Rewrite, when set
	rewriteCall int
}

func (f *faultFS) OpenRegistry(path string) (*os.File, error) {
	if f.openErr != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: f.openErr}
	}
	return f.OS.OpenRegistry(path)
}

func (f *faultFS) ReadRegistry(file *os.File, limit int64) ([]byte, error) {
	if f.readErr != nil {
		return nil, &fs.PathError{Op: "read", Path: file.Name(), Err: f.readErr}
	}
	return f.OS.ReadRegistry(file, limit)
}

func (f *faultFS) ReadLockFile(path string, limit int64) ([]byte, fs.FileInfo, error) {
	if f.backupErr != nil && strings.HasSuffix(path, ".bak") {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: f.backupErr}
	}
	return f.OS.ReadLockFile(path, limit)
}

func (f *faultFS) WriteSynced(path string, data []byte, perm fs.FileMode) error {
	if f.syncedErr != nil {
		return &fs.PathError{Op: "write", Path: path, Err: f.syncedErr}
	}
	return f.OS.WriteSynced(path, data, perm)
}

func (f *faultFS) Rewrite(file *os.File, data []byte) error {
	f.mu.Lock()
	f.rewriteCall++
	rewrite := f.rewrite
	f.mu.Unlock()
	if rewrite != nil {
		return rewrite(file, data)
	}
	return f.OS.Rewrite(file, data)
}

// failFirstRewrite makes the first Rewrite do what cut leaves of it and
// fail with err; later ones (the put-back) work.
func failFirstRewrite(ffs *faultFS, err error, partial func(file *os.File, data []byte)) func(*os.File, []byte) error {
	return func(file *os.File, data []byte) error {
		if ffs.rewriteCall > 1 {
			return ffs.OS.Rewrite(file, data)
		}
		partial(file, data)
		return err
	}
}

// TestScopeRegistryScarceResourcesAreNotCorruption: EMFILE, ENFILE or
// ENOMEM opening or reading the registry (or its backup, when the registry
// is torn) is exit 73 naming the path and the OS error — never "corrupt",
// never a suggestion to reset a registry that is fine — and nothing is
// written.
func TestScopeRegistryScarceResourcesAreNotCorruption(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM} {
		for _, at := range []string{"open", "read", "backup"} {
			t.Run(errno.Error()+" at "+at, func(t *testing.T) {
				f, _ := newRegistry(t)
				me := self(t)
				mustRegister(t, f, me.request("kept", "/kept:write"))
				if at == "backup" {
					crashMidRewrite(t, f, me.request("torn", "/torn:write"), func(b []byte) []byte { return b[:len(b)/2] })
				}
				before, _ := os.ReadFile(f.Path)
				ffs := &faultFS{}
				switch at {
				case "open":
					ffs.openErr = errno
				case "read":
					ffs.readErr = errno
				case "backup":
					ffs.backupErr = errno
				}
				f.FS = ffs
				_, err := f.Register(context.Background(), me.request("new", "/new:write"))
				if !errors.Is(err, ErrUnusable) || !errors.Is(err, errno) || errors.Is(err, ErrCorrupt) {
					t.Fatalf("register = %v, want %v as ErrUnusable, not ErrCorrupt", err, errno)
				}
				if msg := err.Error(); !strings.Contains(msg, f.Path) || strings.Contains(msg, "reset") || strings.Contains(msg, "corrupt") {
					t.Fatalf("error %q: want the path and the OS error, no word of corruption or reset", msg)
				}
				if after, _ := os.ReadFile(f.Path); string(after) != string(before) {
					t.Fatal("the registry was written")
				}
				f.FS = nil // the fault passes: all is as it was
				mustRegister(t, f, me.request("new", "/new:write"))
			})
		}
	}
}

// TestScopeRegistryWriteFaults: ENOSPC or EIO on the write, a short write,
// a failing fsync, a backup that cannot be written: the register fails with
// ErrUnusable naming the file and the cause, the registry holds what it
// held, no backup or temp file is left, and the next register works.
func TestScopeRegistryWriteFaults(t *testing.T) {
	half := func(file *os.File, data []byte) {
		file.Truncate(0)
		file.WriteAt(data[:len(data)/2], 0)
	}
	for _, tt := range []struct {
		name  string
		err   error
		setup func(ffs *faultFS, err error)
	}{
		{"ENOSPC mid-write", syscall.ENOSPC, func(ffs *faultFS, err error) { ffs.rewrite = failFirstRewrite(ffs, err, half) }},
		{"EIO on write", syscall.EIO, func(ffs *faultFS, err error) { ffs.rewrite = failFirstRewrite(ffs, err, half) }},
		{"short write", io.ErrShortWrite, func(ffs *faultFS, err error) { ffs.rewrite = failFirstRewrite(ffs, err, half) }},
		{"fsync fails", syscall.EIO, func(ffs *faultFS, err error) {
			ffs.rewrite = failFirstRewrite(ffs, err, func(file *os.File, data []byte) {
				file.Truncate(0)
				file.WriteAt(data, 0) // all written; the fsync reports the error
			})
		}},
		{"backup cannot be written", syscall.ENOSPC, func(ffs *faultFS, err error) { ffs.syncedErr = err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newRegistry(t)
			me := self(t)
			mustRegister(t, f, me.request("kept", "/kept:write"))
			previous, _ := os.ReadFile(f.Path)
			ffs := &faultFS{}
			tt.setup(ffs, tt.err)
			f.FS = ffs
			_, err := f.Register(context.Background(), me.request("lost", "/lost:write"))
			if !errors.Is(err, ErrUnusable) || !errors.Is(err, tt.err) || !strings.Contains(err.Error(), f.Path) {
				t.Fatalf("register = %v, want %v as ErrUnusable naming the file", err, tt.err)
			}
			if errors.Is(err, ErrCorrupt) || strings.Contains(err.Error(), "reset") {
				t.Fatalf("a write fault is not a corrupt registry: %v", err)
			}
			if got, _ := os.ReadFile(f.Path); string(got) != string(previous) {
				t.Fatalf("registry after the fault:\n%s\nwant\n%s", got, previous)
			}
			if left, _ := filepath.Glob(f.Path + ".*"); len(left) > 0 {
				t.Fatalf("left beside the registry: %v", left)
			}
			f.FS = nil
			mustRegister(t, f, me.request("next", "/next:write"))
			if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"kept", "next"}) {
				t.Fatalf("allocations %v", got)
			}
		})
	}
}
