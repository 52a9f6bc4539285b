package filelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/withlock/withlock/locks"
)

// ErrNoLock: there is no lock file for the run id (nothing to break).
var ErrNoLock = errors.New("no lock")

// LiveHolderError is Break's refusal: the holder is alive, or nothing says
// it is not (another host, a fresh torn file). It matches ErrHeld.
type LiveHolderError struct {
	RunID  string
	Holder locks.Holder // Local and not Orphaned: alive on this host
	At     time.Time
}

func (e *LiveHolderError) Error() string {
	where := "alive on this host"
	switch {
	case e.Holder.Orphaned:
		return fmt.Sprintf("run %q is held by %s", e.RunID, e.Holder.Describe(e.At))
	case e.Holder.Torn:
		where = "too fresh to call corrupt"
	case !e.Holder.Local:
		where = "on another host or pid namespace, so its liveness is unknown, and the lock has not expired"
	}
	return fmt.Sprintf("run %q is held by %s, %s", e.RunID, e.Holder.Describe(e.At), where)
}

func (e *LiveHolderError) Unwrap() error { return locks.ErrHeld }

// Broken is a lock that Break moved aside.
type Broken struct {
	Holder  locks.Holder
	Reason  StaleReason // why it was stale; NotStale when forced over a live holder
	MovedTo string
}

// Break moves the lock of runID aside to <lock>.stale.<unix-ts> (never over
// an earlier stale file), under the same per-run-id guard as every other
// state transition, so it cannot race an acquire, renew or release.
//
// Without force only a lock that the stale rules already condemn is moved
// (expired, holder dead, pid reused, corrupt): what the next acquirer would
// do anyway, done now. A lock whose holder is alive, or cannot be judged,
// is refused with a *LiveHolderError. With force any lock file is moved,
// even one that cannot be read. No lock: ErrNoLock. The fencing counter is
// left alone, so the next holder still gets a larger token.
//
// With lockID set (and force), the lock is moved, alive holder or not, but
// only while it still carries lockID: once that holder released it, a new
// holder's lock is never touched (ErrNoLock). That is the last step of
// `withlock break --signal`, after the holder had its chance to leave
// (AwaitRelease).
func (r *RunLocker) Break(runID string, force bool, lockID string) (*Broken, error) {
	files := r.files(runID)
	lockPath := files.lock
	fi, err := r.fsys().Lstat(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		// Checked before the guard so that breaking a free run id does not
		// leave a guard file (or a directory) behind.
		return nil, fmt.Errorf("%w for run %q", ErrNoLock, runID)
	}
	g, err := r.lockGuard(files.guard)
	if err != nil {
		return nil, err
	}
	defer unlockGuard(g)

	v, err := r.read(lockPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w for run %q", ErrNoLock, runID)
	case lockID != "" && (err != nil || v.parseErr != nil || v.payload.LockID != lockID):
		return nil, fmt.Errorf("%w for run %q: lock_id %s was released", ErrNoLock, runID, lockID)
	case err != nil && !force:
		return nil, fmt.Errorf("%w (--force moves it aside unread)", err)
	case err != nil:
		// Unreadable (a FIFO, a symlink, a file we may not open): moved
		// aside by the inode seen before the guard, as a corrupt lock (one
		// replaced since is put back, see moveLockAside).
		v = lockView{path: lockPath, parseErr: err, modTime: fi.ModTime(), ino: inode(fi), fi: fi}
	}
	verdict := r.judge(v)
	if err != nil {
		verdict = Verdict{Reason: StaleCorrupt}
	}
	h := r.holder(lockPath, v, verdict)
	reason := verdict.Reason
	if reason == NotStale && !force {
		FindPids(h)
		return nil, &LiveHolderError{RunID: runID, Holder: *h, At: r.now()}
	}
	if err := checkOwned("lock file", lockPath, v.fi); err != nil {
		return nil, err
	}
	dst, err := r.moveLockAside(lockPath, v.ino)
	if err != nil {
		return nil, err
	}
	if v.parseErr == nil && v.payload.Tree && r.probe(treePath(lockPath, v.payload.LockID)) == TreeEnded {
		r.removeTree(lockPath, v.payload.LockID)
	}
	r.Log.Info().Str("event", "broken").Str("run_id", runID).Str("reason", string(reason)).
		Bool("forced", reason == NotStale).Int("holder_pid", v.payload.Pid).
		Str("lock_file", lockPath).Str("moved_to", dst).Msg("lock moved aside")
	return &Broken{Holder: *h, Reason: reason, MovedTo: dst}, nil
}

// errReplaced: the lock file changed between the read and the move.
var errReplaced = errors.New("lock file replaced while being moved aside; put back")

// moveLockAside renames lockPath to <lockPath>.stale.<unix-ts>, adding .1,
// .2, … rather than replacing an earlier stale file, and checks that the
// file moved is the inode that was judged (ino 0: unknown, not checked).
// Both break and an acquirer's ReclaimStale move locks aside through it.
func (r *RunLocker) moveLockAside(lockPath string, ino uint64) (string, error) {
	fsys := r.fsys()
	base := lockPath + ".stale." + strconv.FormatInt(r.now().Unix(), 10)
	for i := 0; i < 1000; i++ {
		dst := base
		if i > 0 {
			dst = base + "." + strconv.Itoa(i)
		}
		err := fsys.RenameNoReplace(lockPath, dst)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if fi, err := fsys.Lstat(dst); err == nil && ino != 0 && inode(fi) != ino {
			if fsys.Link(dst, lockPath) == nil {
				fsys.Remove(dst)
			}
			return "", fmt.Errorf("%s: %w", lockPath, errReplaced)
		}
		return dst, nil
	}
	return "", fmt.Errorf("move %s aside: too many stale files for one second", lockPath)
}

// waitTreeEnd waits until nothing holds the tree file at path, or ctx ends
// (its cause is returned).
func waitTreeEnd(ctx context.Context, path string) error {
	ended := awaitTreeEnd(path)
	if ended == nil {
		return nil // gone, or not ours to open: nothing to wait on
	}
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// AwaitRelease waits up to wait for the lock of runID to stop being the
// acquisition lockID's: released, reclaimed, broken or taken over, or no
// longer held — its holder on this host dead and nothing of its command's
// tree left (the lock is then stale). When the wait runs out it returns a
// *HeldError. It is the one wait loop of Acquire (wait.go), with its
// wake-ups: the lock file removed or renamed (inotify), the holder gone
// (pidfd), its tree ended (the tree file's flock).
func (r *RunLocker) AwaitRelease(runID, lockID string, wait time.Duration) error {
	lockPath := r.LockPath(runID)
	return r.loop(context.Background(), waitFor{
		runID: runID,
		start: r.now(),
		wait:  wait,
		names: []string{filepath.Base(lockPath)},
		try: func() (bool, []*locks.Holder, error) {
			v, err := r.read(lockPath)
			if errors.Is(err, fs.ErrNotExist) {
				return true, nil, nil
			}
			if err != nil {
				return false, nil, err
			}
			verdict := r.judge(v)
			if !verdict.Held() || v.parseErr == nil && v.payload.LockID != lockID {
				return true, nil, nil
			}
			return false, []*locks.Holder{r.holder(lockPath, v, verdict)}, nil
		},
	})
}
