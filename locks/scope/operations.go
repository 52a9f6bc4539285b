package scope

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/withlock/withlock/internal/proc"
)

// Register is the holder's start (seed 004: Pod 起動 / scope 分譲): lock →
// reclaim stale → conflict check → register → unlock. A refused request
// still writes the reclaim. Errors: *ConflictError (ErrConflict),
// ErrUsage, ErrUnusable.
func (f *Registry) Register(ctx context.Context, q Request) (Allocation, error) {
	if q.PID == 0 {
		q.PID = os.Getpid()
		start, err := proc.StartTime(q.PID)
		if err != nil {
			return Allocation{}, unusable(fmt.Errorf("own start time: %w", err))
		}
		q.PIDStart = start
	}
	var got Allocation
	var refused error
	err := f.Transform(ctx, func(reg *Table) error {
		f.reclaim(reg, q)
		got, refused = reg.Register(q, f.now())
		return nil
	})
	if err != nil {
		return Allocation{}, err
	}
	return got, refused
}

// Keep is a live holder's check that its allocation *a is still in the
// registry (by name and pid; *a is updated to the entry found, which a
// reclaim may have re-parented since): SPEC §4 asks every holder to make it at least every 5 s. When
// it is missing (an operator's edit, a reset, another writer's mistake) it
// is put back if that conflicts with no live holder (Table.Restore), and
// restored reports it; when it cannot be, the error matches ErrLost and the
// holder's scope is lost. Other errors (a busy, unreadable or corrupt
// registry) say nothing about the allocation: a corrupt registry admits no
// one, so the holder checks again later.
//
// last is the stamp the previous Keep returned: while the registry file
// still has it, nobody changed the file since a was found there, and Keep
// is one lstat instead of a locked read of the whole registry — a thousand
// holders checking every few seconds stay cheap.
func (f *Registry) Keep(ctx context.Context, a *Allocation, last Stamp) (stamp Stamp, restored bool, err error) {
	if now, ok := stampOf(os.Lstat(f.Path)); ok && last != (Stamp{}) && now == last {
		return last, false, nil
	}
	stamp, err = f.transform(ctx, func(t *Table) error {
		if cur := t.find(a.Name); cur != nil && cur.PID == a.PID {
			*a = *cur // re-parented since, perhaps: put back as it is now
			return nil
		}
		f.reclaim(t, Request{Name: a.Name, DelegateFrom: a.DelegatedFrom, Allow: a.Allow()})
		err := t.Restore(*a)
		restored = err == nil
		return err
	})
	if err != nil {
		return Stamp{}, false, err
	}
	return stamp, restored, nil
}

// Release is the holder's exit (seed 004: Pod 正常終了): remove the
// allocation with this name and pid, re-parent its children to its parent,
// recompute denies. It does not sweep for stale allocations — the next
// start does (seed 004: 起動) — so an exit stays one short locked write. An
// allocation already gone is not an error.
func (f *Registry) Release(ctx context.Context, name string, pid int) error {
	return f.Transform(ctx, func(reg *Table) error {
		if !reg.Release(name, pid) {
			f.Log.Debug().Str("name", name).Int("pid", pid).Msg("scope allocation already gone")
		}
		return nil
	})
}

// reclaim is a start's stale sweep (reclaimFor), logging what it removed.
func (f *Registry) reclaim(reg *Table, w Request) {
	for _, a := range reg.reclaimFor(w, f.alive, f.present) {
		f.Log.Info().Str("name", a.Name).Int("pid", a.PID).Strs("scope", a.ScopeAllow).
			Str("delegated_from", a.DelegatedFrom).Msg("reclaimed stale scope allocation")
	}
}

// Status reads the registry under its lock and returns it as a
// delegation tree; nothing is reclaimed or written. A missing registry is
// an empty one.
func (f *Registry) Status(ctx context.Context) ([]Node, error) {
	file, data, err := f.openRead(ctx, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	reg, _, err := f.load(file, data)
	if err != nil {
		return nil, err
	}
	return reg.Tree(f.alive), nil
}

// Reset moves a registry that does not load aside to
// Path+".corrupt.<unix-ts>" (never over an earlier one), under its flock,
// and its backup, if any, with it: that backup could not restore it, and
// beside the fresh registry it would only mislead. A registry that loads —
// directly or restored from its backup — is left alone, and so is one that
// cannot be read for an OS error (EMFILE…), which says nothing about its
// content. It returns the paths things were moved to.
func (f *Registry) Reset(ctx context.Context) ([]string, error) {
	file, data, err := f.openRead(ctx, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, _, err = f.load(file, data); !errors.Is(err, ErrCorrupt) {
		return nil, err
	}
	var moved []string
	for _, p := range []string{f.Path, f.backupPath()} {
		if _, err := f.fs().Lstat(p); p == f.backupPath() && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		to, err := moveAside(f.fs(), p, f.now().Unix())
		if err != nil {
			return moved, unusable(err)
		}
		moved = append(moved, to)
	}
	return moved, nil
}

// moveAside renames path to path.corrupt.<ts>, adding .1, .2, … rather than
// replacing an earlier one.
func moveAside(fsys FS, path string, ts int64) (string, error) {
	to := path + ".corrupt." + strconv.FormatInt(ts, 10)
	for i := 1; ; i++ {
		err := fsys.RenameNoReplace(path, to)
		if !errors.Is(err, fs.ErrExist) || i > 100 {
			return to, err
		}
		to = path + ".corrupt." + strconv.FormatInt(ts, 10) + "." + strconv.Itoa(i)
	}
}
