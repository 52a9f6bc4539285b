package scope

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/locks"
)

// DefaultLockWait bounds the wait for the registry's flock. Every
// holder keeps it for one read-modify-write only, so past this a stopped or
// stuck process holds it.
const DefaultLockWait = 3 * time.Second

// maxSize is the largest registry (or backup) that is read.
const maxSize = 16 << 20

// registryAccess says how the registry is opened and locked.
type registryAccess int

const (
	exclusive         registryAccess = iota // LOCK_EX; created 0600 when missing
	exclusiveExisting                       // LOCK_EX; fs.ErrNotExist when missing
	sharedExisting                          // LOCK_SH; fs.ErrNotExist when missing
)

// FilePath picks the registry: flag > WITHLOCK_SCOPE_FILE >
// $XDG_RUNTIME_DIR/withlock/scope.lock > /tmp/withlock-<uid>/scope.lock.
func FilePath(flag string, getenv func(string) string) string {
	for _, v := range []string{flag, getenv("WITHLOCK_SCOPE_FILE")} {
		if v != "" {
			return v
		}
	}
	if x := getenv("XDG_RUNTIME_DIR"); x != "" {
		return filepath.Join(x, "withlock", "scope.lock")
	}
	return filepath.Join(os.TempDir(), "withlock-"+strconv.Itoa(os.Geteuid()), "scope.lock")
}

// Registry is the machine-wide scope registry on disk. Every change is a
// read-modify-write under flock(LOCK_EX) on the registry file itself,
// written back in place (truncate, one write, fsync) so that programs
// following the seed's protocol — flock the same file, read, write — see
// every update; a rename-replace would leave their flock on an orphaned
// inode. Before each rewrite the content read goes to Path+".bak" (temp +
// rename), from which a registry torn by a crash or a full disk is
// recovered.
//
// The zero value is not usable: set Path. A Registry holds no open file
// between calls and may be used from several goroutines.
type Registry struct {
	Path string
	// LockWait bounds the flock wait; zero means DefaultLockWait.
	LockWait time.Duration
	Log      zerolog.Logger
	// Alive judges holders; nil means kill(pid, 0) (EPERM alive), not a
	// zombie, and the start time recorded (processAlive).
	Alive LiveFunc
	// Now is the clock for created_at; nil means time.Now.
	Now func() time.Time

	// rewrite replaces the content of the locked file; tests inject faults.
	rewrite func(f *os.File, data []byte) error
}

func (f *Registry) backupPath() string { return f.Path + ".bak" }

func (f *Registry) lockWait() time.Duration {
	if f.LockWait > 0 {
		return f.LockWait
	}
	return DefaultLockWait
}

func (f *Registry) alive(pid int, start uint64) bool {
	if f.Alive != nil {
		return f.Alive(pid, start)
	}
	return processAlive(pid, start)
}

func (f *Registry) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

// Transform is the registry's one way to change: lock, read (recovering a
// torn registry from the backup), apply fn, back up what was read, write
// the result in place, unlock. When fn returns an error nothing is
// written. Nothing is written either when the content would not change.
//
// The backup is written to a temp file and fsynced while fn runs (a
// start's sweep is a thousand /proc reads, and on a disk the fsync is
// most of a millisecond), then renamed into place before the registry is
// truncated — or removed when the registry is not rewritten after all.
func (f *Registry) Transform(ctx context.Context, fn func(*Table) error) error {
	file, data, err := f.openRead(ctx, exclusive)
	if err != nil {
		return err
	}
	defer file.Close() // releases the flock
	reg, backup, err := f.load(data)
	if err != nil {
		return err
	}
	var staged *stagedBackup
	if backup != nil {
		staged = f.stageBackup(backup)
		defer staged.discard()
	}
	if err := fn(reg); err != nil {
		return err
	}
	out := reg.Encode()
	if bytes.Equal(out, data) {
		return nil
	}
	if staged != nil {
		if err := staged.commit(); err != nil {
			return err
		}
	}
	return f.replaceContent(file, out, data)
}

// emptyTable is what a new, empty registry holds once written.
var emptyTable = (&Table{}).Encode()

// load parses what the registry holds. It also says what the backup should
// become before the rewrite: the content read when it parsed, the empty
// registry when the file was new, nothing when the backup was used.
//
// An empty file is a new registry — unless a good backup exists: we never
// write an empty registry file, so then a rewrite was torn after its
// truncate. A file that does not parse is recovered from a good backup;
// without one it is ErrCorrupt and left as it is.
func (f *Registry) load(data []byte) (reg *Table, backup []byte, err error) {
	var parseErr error
	if len(data) > 0 {
		if reg, parseErr = DecodeTable(data); parseErr == nil {
			return reg, data, nil
		}
	}
	bak, bakErr := f.readBackup()
	if bakErr == nil {
		if reg, err := DecodeTable(bak); err == nil {
			f.Log.Warn().Str("registry", f.Path).Str("backup", f.backupPath()).
				AnErr("parse_error", parseErr).Msg("scope registry torn or corrupt: recovered from backup")
			return reg, nil, nil
		}
	}
	if len(data) == 0 && errors.Is(bakErr, fs.ErrNotExist) {
		return &Table{}, emptyTable, nil
	}
	if parseErr == nil {
		parseErr = errors.New("empty")
	}
	return nil, nil, fmt.Errorf("%w: %s: %v, and no good backup at %s (%s); `withlock scope reset` moves it aside",
		ErrCorrupt, f.Path, parseErr, f.backupPath(), describeBackupErr(bakErr))
}

func describeBackupErr(err error) string {
	switch {
	case err == nil:
		return "it does not parse either"
	case errors.Is(err, fs.ErrNotExist):
		return "none"
	}
	return err.Error()
}

func (f *Registry) readBackup() ([]byte, error) {
	data, _, err := locks.OSFS{}.ReadLockFile(f.backupPath(), maxSize)
	if err == nil && len(data) > maxSize {
		err = fmt.Errorf("%s: over %d bytes", f.backupPath(), maxSize)
	}
	return data, err
}

// stagedBackup is the last good content on its way to Path+".bak": a temp
// file in the same directory, written and fsynced by a goroutine. commit
// renames it over the old backup; discard removes it unless committed.
// Either waits for the goroutine, so none outlives Transform.
type stagedBackup struct {
	tmp, path string
	done      chan struct{}
	err       error // of writeSynced; read after done is closed
	committed bool
}

func (f *Registry) stageBackup(data []byte) *stagedBackup {
	b := &stagedBackup{
		tmp:  f.backupPath() + ".tmp." + randomName(),
		path: f.backupPath(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(b.done)
		b.err = writeSynced(b.tmp, data)
	}()
	return b
}

// commit puts the staged backup in place once it is on the device.
func (b *stagedBackup) commit() error {
	<-b.done
	if b.err != nil {
		return unusable(fmt.Errorf("back up scope registry: %w", b.err))
	}
	if err := os.Rename(b.tmp, b.path); err != nil {
		return unusable(fmt.Errorf("back up scope registry: %w", err))
	}
	b.committed = true
	return nil
}

// discard removes the temp file of a backup that was not committed
// (writeSynced removed it already if it failed).
func (b *stagedBackup) discard() {
	<-b.done
	if !b.committed && b.err == nil {
		os.Remove(b.tmp)
	}
}

// writeSynced creates path with data and fsyncs it: the backup must be on
// the device before the registry is truncated, or a power cut could leave
// a torn registry beside an empty backup.
func writeSynced(path string, data []byte) (err error) {
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	if _, err := file.Write(data); err != nil {
		return err
	}
	return file.Sync()
}

// replaceContent rewrites the locked registry in place. When that fails
// (ENOSPC) it tries to put the previous content back; failing that, the
// backup written just before serves the next reader.
func (f *Registry) replaceContent(file *os.File, data, previous []byte) error {
	rewrite := f.rewrite
	if rewrite == nil {
		rewrite = rewriteInPlace
	}
	err := rewrite(file, data)
	if err == nil {
		return nil
	}
	if len(previous) > 0 {
		if rerr := rewriteInPlace(file, previous); rerr != nil {
			f.Log.Warn().Err(rerr).Str("registry", f.Path).Msg("could not restore scope registry; its backup will be used")
		}
	}
	return unusable(&fs.PathError{Op: "rewrite", Path: f.Path, Err: err})
}

// rewriteInPlace is truncate + one write + fsync on the same inode.
func rewriteInPlace(file *os.File, data []byte) error {
	if err := file.Truncate(0); err != nil {
		return err
	}
	if crashPointsEnabled && len(data) > 1 {
		// Test-only build: leave a torn registry and die here.
		file.WriteAt(data[:len(data)/2], 0)
		crashPoint("scope:mid-write")
	}
	if _, err := file.WriteAt(data, 0); err != nil {
		return err
	}
	return file.Sync()
}

// openRead opens the registry with access, which takes its flock, and
// reads it. The caller closes the file, which releases the flock.
func (f *Registry) openRead(ctx context.Context, access registryAccess) (*os.File, []byte, error) {
	file, err := f.openLocked(ctx, access)
	if err != nil {
		return nil, nil, err
	}
	data, err := readRegistry(file, f.Path)
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	return file, data, nil
}

// readRegistry reads the whole locked file; past maxSize only one
// byte more is read, for DecodeTable to refuse.
func readRegistry(file *os.File, path string) ([]byte, error) {
	fi, err := file.Stat()
	if err != nil {
		return nil, unusable(err)
	}
	data := make([]byte, min(fi.Size(), maxSize+1))
	n, err := file.ReadAt(data, 0)
	if err != nil && n < len(data) {
		return nil, unusable(&fs.PathError{Op: "read", Path: path, Err: err})
	}
	return data, nil
}
