package filelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks"
)

// Lock is a held run lock. Renew and Release act only while the file on
// disk still carries its lock_id.
type Lock struct {
	r     *RunLocker
	RunID string
	Path  string
	files runFiles

	mu      sync.Mutex
	payload locks.Payload
	written []byte // the lock file's bytes as we last wrote them
	serial  int
	hold    *os.File // the hold's flock (hold.go), let go after the file
	tree    *os.File // the tree file (tree.go); nil without one
}

// TreeFile is the descriptor of this acquisition's tree file, or nil. It
// is inheritable already: every process withlock starts holds it, and
// with it the lock, until that process ends or closes it. Release takes
// the file from its name, so processes left running after a release hold
// nothing a lock names.
func (l *Lock) TreeFile() *os.File { return l.tree }

// LockID is the random token of this acquisition.
func (l *Lock) LockID() string { return l.Payload().LockID }

// FencingToken grows with every acquisition of the run id.
func (l *Lock) FencingToken() uint64 { return l.Payload().FencingToken }

// Payload is what was last written to the lock file.
func (l *Lock) Payload() locks.Payload {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.payload
}

// Env is what the child is told about the lock it runs under, the run id
// first (SlotLock.Env replaces it). It may be called while the heartbeat
// renews the lock.
func (l *Lock) Env() []string {
	p := l.Payload()
	return []string{
		"WITHLOCK_RUN_ID=" + l.RunID,
		"WITHLOCK_LOCK_ID=" + p.LockID,
		"WITHLOCK_LOCK_FILE=" + l.Path,
		"WITHLOCK_FENCING_TOKEN=" + strconv.FormatUint(p.FencingToken, 10),
	}
}

// verifyOwned reads the lock file under the guard and reports ErrLost when
// it is gone or carries another lock_id.
func (l *Lock) verifyOwned() error {
	data, fi, err := l.r.fsys().ReadLockFile(l.Path, locks.MaxPayload)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is gone", locks.ErrLost, l.Path)
	}
	if err != nil {
		return err
	}
	if err := checkOwned("lock file", l.Path, fi); err != nil {
		return fmt.Errorf("%w: %w", locks.ErrLost, err)
	}
	if len(l.written) > 0 && bytes.Equal(data, l.written) {
		// Exactly what we wrote, our random lock_id included: no need to
		// parse it.
		return nil
	}
	p, err := locks.ParsePayload(data)
	if err != nil {
		return fmt.Errorf("%w: %s was replaced by an unreadable file", locks.ErrLost, l.Path)
	}
	if p.LockID != l.payload.LockID && !failpoint.On(failpoint.BrokenLockID) {
		return fmt.Errorf("%w: %s now belongs to pid %d (lock_id %s)", locks.ErrLost, l.Path, p.Pid, p.LockID)
	}
	return nil
}

// whileOwned runs change under the guard, after checking the file on disk
// still carries our lock_id; point names the moment between the two for
// the race tests and crash points.
func (l *Lock) whileOwned(point string, change func(FS) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, err := l.r.lockGuard(l.files.guard)
	if err != nil {
		return err
	}
	defer unlockGuard(g)
	if err := l.verifyOwned(); err != nil {
		return err
	}
	l.r.at(point)
	return change(l.r.fsys())
}

// Renew pushes expires_at to now+TTL, atomically (temp file renamed over the
// lock), under the guard and only while the file is still ours.
func (l *Lock) Renew() error {
	return l.whileOwned("renew:verified", func(FS) error {
		r := l.r
		p := l.payload
		p.ExpiresAt = locks.Epoch(r.now().Add(r.TTL))
		l.serial++
		tmp := l.Path + ".tmp." + p.LockID + "." + strconv.Itoa(l.serial)
		enc, err := p.Encode()
		if err != nil {
			return err
		}
		if err := r.viaTemp(l.Path, tmp, enc, "renew:after-temp", false); err != nil {
			return err
		}
		l.payload, l.written = p, enc
		r.Log.Debug().Str("event", "renewed").Str("run_id", l.RunID).
			Float64("expires_at", p.ExpiresAt).Msg("lock renewed")
		return nil
	})
}

// Release removes the lock file if it is still ours; otherwise it does
// nothing (someone reclaimed it) and says so through ErrLost. Either way
// it then lets the hold go, after the guard: the waiter it wakes goes
// straight for the lock.
//
// A release that cannot open the guard or the lock file for want of
// descriptors (EMFILE, ENFILE) has changed nothing, keeps the hold and the
// tree file, and may be called again once descriptors are freed.
func (l *Lock) Release() error {
	err := l.whileOwned("release:verified", func(fsys FS) error {
		if err := fsys.Remove(l.Path); err != nil {
			return err
		}
		l.r.Log.Debug().Str("run_id", l.RunID).Str("lock_file", l.Path).Msg("lock file removed")
		if l.tree != nil {
			// Our own flock goes with our descriptor; the file becomes the
			// run id's spare (tree.go), for the next acquisition to take.
			l.tree.Close()
			l.tree = nil
			if err := fsys.Rename(treePath(l.Path, l.payload.LockID), l.files.spare); err != nil {
				l.r.removeTree(l.Path, l.payload.LockID)
			}
		}
		return nil
	})
	if OutOfDescriptors(err) {
		return err
	}
	l.mu.Lock()
	if l.hold != nil {
		l.hold.Close()
		l.hold = nil
	}
	if l.tree != nil {
		if err != nil {
			// Lost: the lock file is someone else's now, but the tree file
			// is this acquisition's alone.
			l.r.removeTree(l.Path, l.payload.LockID)
		}
		l.tree.Close()
		l.tree = nil
	}
	l.mu.Unlock()
	return err
}

// OutOfDescriptors reports whether err is a failure to open a file for
// want of descriptors: the process's limit (EMFILE) or the system's
// (ENFILE). A Release that fails so has changed nothing and may run again
// once descriptors are freed.
func OutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// Heartbeat renews the lock every TTL/3 until stop is called. lost receives
// one error (matching ErrLost) when the lock turns out to be gone or taken,
// or when renewals kept failing until the lock expired. stop waits for the
// heartbeat to end, so a Release after it never races a Renew.
func (l *Lock) Heartbeat() (lost <-chan error, stop func()) {
	ch := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	interval := max(l.r.TTL/3, time.Millisecond)
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := l.Renew()
			if err == nil {
				continue
			}
			if errors.Is(err, locks.ErrLost) {
				ch <- err
				return
			}
			l.r.Log.Warn().Err(err).Str("run_id", l.RunID).Msg("lock renewal failed; retrying")
			if l.r.now().After(l.Payload().Expires()) {
				ch <- fmt.Errorf("%w: renewals failed until the lock expired: %w", locks.ErrLost, err)
				return
			}
		}
	}()
	return ch, func() { cancel(); <-done }
}
