package filelock

import (
	"errors"
	"io/fs"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
)

// DefaultGCAge is how old a leftover must be before gc removes it.
const DefaultGCAge = 7 * 24 * time.Hour

// MinTempAge is a floor under the age of temp files that gc removes,
// whatever it is asked: a writer's temp file lives between its write and
// its link or rename, and removing it then would fail that acquire or
// renewal. Moved-aside stale files have no writer and no floor.
const MinTempAge = time.Minute

// CollectGarbage removes the leftovers in the locker's directory — locks
// moved aside (*.stale.*) and temp files (*.tmp.*) — older than olderThan,
// and returns those it removed (with dryRun, what it would remove). It
// never touches a .lock, .guard, .fence or spare .tree file: those are
// live state, the fencing counter, or the inode the next acquisition's
// tree file reuses (tree.go). Removals that fail are joined into the error; the others are
// still done. A missing directory holds nothing.
func (r *RunLocker) CollectGarbage(olderThan time.Duration, dryRun bool) ([]Leftover, error) {
	rep, err := r.Inspect()
	if err != nil {
		return nil, err
	}
	now := r.now()
	var removed []Leftover
	var errs []error
	for _, l := range rep.Leftovers {
		minAge := olderThan
		if l.Kind == LeftoverTemp || l.Kind == LeftoverTree {
			minAge = max(olderThan, MinTempAge)
		}
		if l.Age(now) < minAge {
			continue
		}
		// Only our own leftovers (root: anyone's): in a shared dir another
		// user's are theirs to collect — the sticky bit would refuse their
		// removal, and a dry run would list what it cannot remove. One
		// gone already is for removeLeftover to find so.
		if fi, err := r.fsys().Lstat(l.Path); err == nil && checkOwned("leftover", l.Path, fi) != nil &&
			!failpoint.On(failpoint.CollectAnyOwner) {
			continue
		}
		if !dryRun {
			switch err := r.removeLeftover(l); {
			case errors.Is(err, fs.ErrNotExist):
				continue // removed by someone else (another gc): not ours to report
			case err != nil:
				errs = append(errs, err)
				continue
			}
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}

// removeLeftover removes one leftover. A tree file is removed under its run
// id's guard, and only if the lock file does not name it by then: between
// its creation and the link of its lock file an acquirer holds the guard.
func (r *RunLocker) removeLeftover(l Leftover) error {
	if l.Kind != LeftoverTree || l.Key == "" {
		return r.fsys().Remove(l.Path)
	}
	files := filesOf(r.Dir, l.Key)
	g, err := lockGuard(r.fsys(), files.guard, r.guardBound())
	if err != nil {
		return err
	}
	defer unlockGuard(g)
	lockPath := files.lock
	if v, err := r.read(lockPath); err == nil && v.parseErr == nil && v.payload.Tree &&
		treePath(lockPath, v.payload.LockID) == l.Path {
		return fs.ErrNotExist // it is a lock's now: not ours to report
	}
	return r.fsys().Remove(l.Path)
}
