package scope

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks/filelock"
)

// DefaultLockWait bounds the wait for the registry's flock. Every
// holder keeps it for one read-modify-write only, so past this a stopped or
// stuck process holds it.
const DefaultLockWait = 3 * time.Second

// maxSize is the largest registry (or backup) that is read.
const maxSize = 16 << 20

// FilePath picks the registry: flag > WITHLOCK_SCOPE_FILE > scope.lock in
// the run lock's default dir (filelock.DefaultDir: /run/withlock for root,
// /tmp/withlock-<uid> otherwise). Like that dir it depends on nothing but
// the user, so a scope taken from cron (no $XDG_RUNTIME_DIR) and one from
// a login shell are in the same registry (SPEC §4).
func FilePath(flag string, getenv func(string) string) string {
	return cmp.Or(flag, getenv("WITHLOCK_SCOPE_FILE"), filepath.Join(filelock.DefaultDir(), "scope.lock"))
}

// Registry is the machine-wide scope registry on disk. Every change is a
// read-modify-write under flock(LOCK_EX) on the registry file itself,
// written back in place (truncate, one write, fsync) so that programs
// following the seed's protocol — flock the same file, read, write — see
// every update; a rename-replace would leave their flock on an orphaned
// inode.
//
// A rewrite cut short (a crash, a full disk) leaves a torn registry. So the
// new content goes to Path+".bak" first (temp + fsync + rename), and the
// backup is removed once the rewrite is on the device: a backup beside the
// registry is always the latest state some withlock set out to write, and
// a torn registry is restored from it only when it is provably that
// rewrite cut short (Transform). Anything else is ErrCorrupt.
//
// The zero value is not usable: set Path. A Registry holds no open file
// between calls and may be used from several goroutines.
type Registry struct {
	Path string
	// LockWait bounds the flock wait; zero means DefaultLockWait.
	LockWait time.Duration
	Log      zerolog.Logger
	// Alive judges holders; nil means kill(pid, 0) (EPERM alive), not a
	// zombie, and the start time recorded (processAlive). A start asks it
	// with the start time only of the holders that concern it, and of the
	// others only whether the pid runs (start 0; nil: pidPresent).
	Alive LiveFunc
	// Now is the clock for created_at; nil means time.Now.
	Now func() time.Time
	// FS is the filesystem; nil means OS. Tests inject faults through it.
	FS FS
}

func (f *Registry) fs() FS { return cmp.Or[FS](f.FS, OS{}) }

func (f *Registry) backupPath() string { return f.Path + ".bak" }

func (f *Registry) lockWait() time.Duration { return cmp.Or(f.LockWait, DefaultLockWait) }

func (f *Registry) alive(pid int, start uint64) bool {
	if f.Alive != nil {
		return f.Alive(pid, start)
	}
	return processAlive(pid, start)
}

// present is the cheap check of a holder a start has no other question
// for: does its pid run at all.
func (f *Registry) present(pid int) bool {
	if f.Alive != nil {
		return f.Alive(pid, 0)
	}
	return pidPresent(pid)
}

func (f *Registry) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Transform is the registry's one way to change: lock, read (restoring a
// torn registry where that is provably right), apply fn, write the result
// in place, unlock. When fn returns an error nothing is written. Nothing is
// written either when the content would not change.
func (f *Registry) Transform(ctx context.Context, fn func(*Table) error) error {
	_, err := f.transform(ctx, fn)
	return err
}

// Stamp is what the registry file looked like at one moment: which file,
// its size and its modification and change times. A file that still has a
// stamp still holds what was read when it was taken (the kernel gives a
// change made after a stamp was taken a newer time).
type Stamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
}

// transform is Transform, returning the stamp of the file as it left it:
// lock, read, decode, apply fn, encode, write in place, unlock (the
// deferred Close drops the flock).
func (f *Registry) transform(ctx context.Context, fn func(*Table) error) (Stamp, error) {
	file, data, err := f.openRead(ctx, true)
	if err != nil {
		return Stamp{}, err
	}
	defer file.Close()
	reg, restored, err := f.load(file, data)
	if err != nil {
		return Stamp{}, err
	}
	if !restored {
		// The registry read well: a backup beside it is no rewrite in
		// flight (ours completed, or was undone) and must not be taken
		// for one later.
		f.removeBackup()
	}
	if err := fn(reg); err != nil {
		return Stamp{}, err
	}
	if out := reg.Encode(); restored || !bytes.Equal(out, data) {
		if err := f.write(file, out, data, restored); err != nil {
			return Stamp{}, err
		}
	}
	stamp, _ := stampOf(file.Stat())
	return stamp, nil
}

// restoreWindow bounds how much later than its backup a torn registry may
// have been written to count as that very rewrite cut short: the rewrite
// starts right after the backup is renamed into place.
const restoreWindow = 10 * time.Second

// load parses what the registry holds. restored says the content came from
// the backup and must be written back.
//
// A registry that does not parse — torn, emptied, garbage — is restored
// from the backup only when all of these hold: the backup parses, the
// registry's bytes are a prefix of it (a rewrite cut short writes a prefix
// of what it meant to write), and the registry was last written within
// restoreWindow of the backup (a later writer's torn file is not ours).
// An empty file with no backup is a new registry only when it was never
// written since it was created (its birth time is its modification time):
// one emptied by another writer is not. Everything else is ErrCorrupt,
// naming the file and `withlock break --scopes`; an OS error reading the
// backup (EMFILE, ENOMEM, EIO…) is ErrUnusable and says what failed.
func (f *Registry) load(file *os.File, data []byte) (reg *Table, restored bool, err error) {
	why := "empty"
	if len(data) > 0 {
		reg, err := DecodeTable(data)
		if err == nil {
			return reg, false, nil
		}
		why = err.Error()
	}
	bak, bakInfo, bakErr := f.readBackup()
	switch {
	case bakErr == nil:
		reg, err := DecodeTable(bak)
		if err != nil {
			why += fmt.Sprintf(", and its backup %s does not parse either (%v)", f.backupPath(), err)
			break
		}
		if !bytes.HasPrefix(bak, data) {
			why += fmt.Sprintf(", and its backup %s is not a rewrite of it cut short (another writer changed it)", f.backupPath())
			break
		}
		if written, ok := stampOf(file.Stat()); !ok || time.Unix(0, written.mtime).Sub(bakInfo.ModTime()) > restoreWindow {
			why += fmt.Sprintf(", and its backup %s is older than its last write", f.backupPath())
			break
		}
		f.Log.Warn().Str("registry", f.Path).Str("backup", f.backupPath()).Str("parse_error", why).
			Msg("scope registry torn by a rewrite cut short: restored from its backup")
		return reg, true, nil
	case errors.Is(bakErr, fs.ErrNotExist):
		if len(data) == 0 && neverWritten(file) {
			return &Table{}, false, nil
		}
		if len(data) == 0 {
			why = "emptied by another writer"
		}
		why += ", and no backup of a rewrite in flight"
	case errors.Is(bakErr, errBadBackup):
		why += fmt.Sprintf(", and %v", bakErr)
	default:
		return nil, false, unusable(fmt.Errorf("%s is torn (%s) and its backup cannot be read: %w", f.Path, why, bakErr))
	}
	return nil, false, fmt.Errorf("%w: %s: %s; `withlock break --scopes` moves it aside (live holders put their allocations back within 5s)",
		ErrCorrupt, f.Path, why)
}

// errBadBackup marks a backup that is there but is no file load could use
// (a symlink, a directory, too big): reset moves it aside.
var errBadBackup = errors.New("bad backup")

func (f *Registry) readBackup() ([]byte, fs.FileInfo, error) {
	data, fi, err := f.fs().ReadLockFile(f.backupPath(), maxSize)
	switch {
	case err == nil && len(data) > maxSize:
		return nil, nil, fmt.Errorf("%w: %s is over %d bytes", errBadBackup, f.backupPath(), maxSize)
	case errors.Is(err, syscall.ELOOP) || (fi != nil && !fi.Mode().IsRegular()):
		return nil, nil, fmt.Errorf("%w: %s is not a regular file", errBadBackup, f.backupPath())
	}
	return data, fi, err
}

// write backs up out, rewrites the registry in place and removes the
// backup. When the rewrite fails (ENOSPC, EIO) it tries to put the previous
// content back — not after a restore, whose previous content is torn — and
// then the backup, of a rewrite that did not happen, goes too; failing
// that, the backup restores the registry on the next open.
func (f *Registry) write(file *os.File, out, previous []byte, restored bool) error {
	if err := f.backUp(out); err != nil {
		return unusable(fmt.Errorf("back up scope registry: %w", err))
	}
	err := f.rewrite(file, out)
	if err == nil {
		f.removeBackup()
		return nil
	}
	if !restored {
		if rerr := f.fs().Rewrite(file, previous); rerr != nil {
			f.Log.Warn().Err(rerr).Str("registry", f.Path).Msg("could not put the scope registry back; its backup will restore it")
		} else {
			f.removeBackup()
		}
	}
	return unusable(&fs.PathError{Op: "rewrite", Path: f.Path, Err: err})
}

func (f *Registry) removeBackup() {
	if err := f.fs().Remove(f.backupPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.Log.Warn().Err(err).Str("backup", f.backupPath()).Msg("could not remove the scope registry's backup")
	}
}

// backUp writes data to the backup through a temp file in the same
// directory, fsynced before it is renamed into place: the backup must be
// on the device before the registry is truncated, or a power cut could
// leave a torn registry beside an empty backup.
func (f *Registry) backUp(data []byte) error {
	tmp := f.backupPath() + ".tmp." + randomName()
	if err := f.fs().WriteSynced(tmp, data, 0o600); err != nil {
		return err
	}
	if err := f.fs().Rename(tmp, f.backupPath()); err != nil {
		f.fs().Remove(tmp)
		return err
	}
	return nil
}

// rewrite rewrites the registry in place; in the crash build it can die
// halfway (WITHLOCK_FAILPOINTS=crash=scope:mid-write), leaving a torn registry.
func (f *Registry) rewrite(file *os.File, data []byte) error {
	if failpoint.Armed("scope:mid-write") && len(data) > 1 {
		if err := f.fs().Rewrite(file, data[:len(data)/2]); err == nil {
			failpoint.At("scope:mid-write")
		}
	}
	return f.fs().Rewrite(file, data)
}

// openRead opens the registry — creating it when create is set, else
// fs.ErrNotExist when it is missing — takes its flock and reads it. The
// caller closes the file, which releases the flock.
func (f *Registry) openRead(ctx context.Context, create bool) (*os.File, []byte, error) {
	file, err := f.openLocked(ctx, create)
	if err != nil {
		return nil, nil, err
	}
	// Past maxSize only one byte more is read, for DecodeTable to refuse.
	// An error is ErrUnusable, never ErrCorrupt: it says nothing about what
	// the file holds.
	data, err := f.fs().ReadRegistry(file, maxSize)
	if err != nil {
		file.Close()
		return nil, nil, unusable(fmt.Errorf("read scope registry %s: %w", f.Path, err))
	}
	return file, data, nil
}
