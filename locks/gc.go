package locks

import (
	"errors"
	"io/fs"
	"time"
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
// never touches a .lock, .guard or .fence file: those are live state or
// the fencing counter. Removals that fail are joined into the error; the others are
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
		if !oldEnough(l, olderThan, now) {
			continue
		}
		if !dryRun {
			err := r.fsys().Remove(l.Path)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed by someone else (another gc): not ours to report
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}

func oldEnough(l Leftover, olderThan time.Duration, now time.Time) bool {
	if l.Kind == LeftoverTemp {
		olderThan = max(olderThan, MinTempAge)
	}
	return l.Age(now) >= olderThan
}
