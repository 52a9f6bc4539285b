package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

func TestCollectGarbage(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	now := time.Now()
	old := now.Add(-30 * 24 * time.Hour)
	key := locks.Key("job")
	files := map[string]time.Time{
		key + ".lock.stale.1000000000":                  now,                        // moved aside in 2001 (the name says)
		key + ".lock.stale.1000000000.1":                now,                        // its collision sibling
		key + ".lock.stale." + itoa(uint64(now.Unix())): old,                        // moved aside now, old mtime: kept
		key + ".lock.tmp.aaa":                           old,                        // temp, old
		key + ".lock.tmp.bbb":                           now.Add(-30 * time.Second), // temp, in flight
		key + ".lock":                                   old,                        // never
		key + ".guard":                                  old,                        // never
		key + ".fence":                                  old,                        // never
		"scope.lock":                                    old,                        // never
		"scope.lock.corrupt.1000000000":                 old,                        // not gc's
	}
	for name, mtime := range files {
		writeLockFile(t, filepath.Join(dir, name), []byte("x"), mtime)
	}

	names := func(ls []Leftover) []string {
		var out []string
		for _, l := range ls {
			out = append(out, filepath.Base(l.Path))
		}
		sort.Strings(out)
		return out
	}
	want := []string{key + ".lock.stale.1000000000", key + ".lock.stale.1000000000.1", key + ".lock.tmp.aaa"}

	got, err := r.CollectGarbage(DefaultGCAge, true)
	if err != nil || !slices.Equal(names(got), want) {
		t.Fatalf("dry run: %q %v; want %q", names(got), err, want)
	}
	for name := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("dry run removed %s", name)
		}
	}

	got, err = r.CollectGarbage(DefaultGCAge, false)
	if err != nil || !slices.Equal(names(got), want) {
		t.Fatalf("gc: %q %v; want %q", names(got), err, want)
	}
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		gone := errors.Is(err, os.ErrNotExist)
		if gone != slices.Contains(want, name) {
			t.Errorf("%s: gone=%v", name, gone)
		}
	}

	// --older-than 0 takes the rest of the stale files, but a temp file
	// younger than MinTempAge is left to its writer.
	got, err = r.CollectGarbage(0, false)
	if err != nil || len(got) != 1 || got[0].Kind != LeftoverStale {
		t.Fatalf("gc 0: %+v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, key+".lock.tmp.bbb")); err != nil {
		t.Errorf("in-flight temp file removed: %v", err)
	}
}

func TestCollectGarbageMissingDir(t *testing.T) {
	r := newTestLocker(t, filepath.Join(t.TempDir(), "none"), time.Minute)
	if got, err := r.CollectGarbage(0, false); err != nil || len(got) != 0 {
		t.Fatalf("%+v %v", got, err)
	}
}

// goneFS removes a file just before the locker does: another gc got there
// first.
type goneFS struct{ osFS }

func (f goneFS) Remove(p string) error {
	os.Remove(p)
	return f.osFS.Remove(p)
}

// TestCollectGarbageReportsOnlyWhatItRemoved: a leftover that vanished
// before gc's own removal is neither reported as removed nor an error.
func TestCollectGarbageReportsOnlyWhatItRemoved(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	writeLockFile(t, r.LockPath("job")+".stale.1000000000", []byte("x"), time.Time{})
	r.FS = goneFS{}
	got, err := r.CollectGarbage(DefaultGCAge, false)
	if err != nil || len(got) != 0 {
		t.Fatalf("removed %+v, %v; want nothing reported", got, err)
	}
}
