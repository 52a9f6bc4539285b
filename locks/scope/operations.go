package scope

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/withlock/withlock/locks"
)

// Register is the holder's start (seed 004: Pod 起動 / scope 分譲): lock →
// reclaim stale → conflict check → register → unlock. A refused request
// still writes the reclaim. Errors: *ConflictError (ErrConflict),
// ErrUsage, ErrUnusable.
func (f *Registry) Register(ctx context.Context, q Request) (Allocation, error) {
	if q.PID == 0 {
		q.PID = os.Getpid()
		start, err := locks.ProcessStartTime(q.PID)
		if err != nil {
			return Allocation{}, unusable(fmt.Errorf("own start time: %w", err))
		}
		q.PIDStart = start
	}
	var got Allocation
	var refused error
	err := f.Transform(ctx, func(reg *Table) error {
		f.reclaim(reg)
		got, refused = reg.Register(q, f.now())
		return nil
	})
	if err != nil {
		return Allocation{}, err
	}
	return got, refused
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

func (f *Registry) reclaim(reg *Table) {
	for _, a := range reg.ReclaimStale(f.alive) {
		f.Log.Info().Str("name", a.Name).Int("pid", a.PID).Strs("scope", a.ScopeAllow).
			Str("delegated_from", a.DelegatedFrom).Msg("reclaimed stale scope allocation")
	}
}

// Status reads the registry under a shared lock and returns it as a
// delegation tree; nothing is reclaimed or written. A missing registry is
// an empty one.
func (f *Registry) Status(ctx context.Context) ([]Node, error) {
	file, data, err := f.openRead(ctx, sharedExisting)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	reg, _, err := f.load(data)
	if err != nil {
		return nil, err
	}
	return reg.Tree(f.alive), nil
}

// Reset moves a corrupt registry aside to Path+".corrupt.<unix-ts>" (never
// over an earlier one), under its flock, and a backup that does not parse
// with it. A registry that loads — directly or from its backup — is left
// alone. It returns the paths things were moved to.
func (f *Registry) Reset(ctx context.Context) ([]string, error) {
	file, data, err := f.openRead(ctx, exclusiveExisting)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, _, err = f.load(data); err == nil {
		return nil, nil
	}
	var moved []string
	for _, p := range []string{f.Path, f.backupPath()} {
		if p == f.backupPath() && !badBackup(f.readBackup()) {
			continue
		}
		to, err := moveAside(p, f.now().Unix())
		if err != nil {
			return moved, unusable(err)
		}
		moved = append(moved, to)
	}
	return moved, nil
}

// badBackup reports whether a backup exists that load cannot use: one
// that does not parse, or cannot be read at all (a symlink, a directory,
// too big). Left beside the fresh registry it would fail every start again.
func badBackup(data []byte, err error) bool {
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	_, err = DecodeTable(data)
	return err != nil
}

// moveAside renames path to path.corrupt.<ts>, adding .1, .2, … rather than
// replacing an earlier one.
func moveAside(path string, ts int64) (string, error) {
	base := path + ".corrupt." + strconv.FormatInt(ts, 10)
	for i := 0; ; i++ {
		to := base
		if i > 0 {
			to += "." + strconv.Itoa(i)
		}
		err := locks.OSFS{}.RenameNoReplace(path, to)
		if err == nil {
			return to, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return "", err
		}
	}
}
