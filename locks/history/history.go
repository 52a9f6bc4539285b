// Package history keeps what happened to a run id while nobody watched
// (SPEC §8): one JSON line per run that withlock started, and one per start
// it refused, in <sha256hex(run_id)>.runs beside the lock.
//
// Lines are appended with one write(2) on a descriptor opened O_APPEND, so
// concurrent writers never interleave or lose a line. The file is bounded:
// past MaxLines lines it is rewritten (temp file + rename) to the last
// KeepRuns runs and KeepRefused refused starts, and what it drops is
// folded into one totals line, so that counters never go down.
//
// The rewrite and the appends are serialised by flock(2) on the .runs file
// itself, not by the run id's guard: the guard serialises lock state
// transitions on the acquire path, which history must never slow down. An
// appender takes LOCK_SH and checks that the path still names the inode it
// opened (a rewrite renames a new one in); the rewrite takes LOCK_EX, so
// no append can land in the inode it is replacing.
package history

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks"
)

// Kinds of record.
const (
	KindRun     = "run"     // a run that ended
	KindStart   = "start"   // written once the command has been started
	KindRefused = "refused" // a start refused: conflict, or the wait ran out
	KindTotals  = "totals"  // what a rewrite dropped, counted
)

// Results of a run.
const (
	ResultExit     = "exit"
	ResultSignal   = "signal"
	ResultTimeout  = "timeout"
	ResultLockLost = "lock_lost"
	ResultError    = "error"
)

// Bounds of the file.
const (
	KeepRuns    = 100
	KeepRefused = 50
	MaxLines    = 2 * KeepRuns
)

// Suffix ends the name of a history file.
const Suffix = ".runs"

// Record is one line of the file. Kind is its first field: a line glued to
// a torn one is found again by it (Read).
type Record struct {
	Kind         string  `json:"kind"`
	RunID        string  `json:"run_id"`
	StartedAt    float64 `json:"started_at,omitempty"`
	EndedAt      float64 `json:"ended_at,omitempty"`
	Result       string  `json:"result,omitempty"`
	ExitCode     *int    `json:"exit_code,omitempty"`
	Signal       string  `json:"signal,omitempty"`
	Message      string  `json:"message,omitempty"`
	Pid          int     `json:"pid,omitempty"`
	Host         string  `json:"host,omitempty"`
	FencingToken uint64  `json:"fencing_token,omitempty"`
	Command      string  `json:"command,omitempty"`
	Slot         *int    `json:"slot,omitempty"`
	Shared       bool    `json:"shared,omitempty"`

	// A refused start: when, why ("conflict" or "wait"), and the holder met.
	At      float64 `json:"at,omitempty"`
	Reason  string  `json:"reason,omitempty"`
	Holder  *Holder `json:"holder,omitempty"`
	Skipped int     `json:"skipped,omitempty"` // totals: refused starts dropped after SkippedSince
	// Totals: runs by result and refused starts, of the lines dropped.
	Runs         map[string]int `json:"runs,omitempty"`
	Conflicts    int            `json:"conflicts,omitempty"`
	SkippedSince float64        `json:"skipped_since,omitempty"`
}

// Holder is who held the lock when a start was refused.
type Holder struct {
	Pid     int    `json:"pid,omitempty"`
	Host    string `json:"host,omitempty"`
	Command string `json:"command,omitempty"`
}

// File is where the history of runID lives in the lock dir: beside its
// lock, under the same key.
func File(dir, runID string) string {
	return filepath.Join(dir, locks.Key(runID)+Suffix)
}

// Epoch is t as the files write it: seconds since 1970, a float.
func Epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Time is the inverse of Epoch.
func Time(s float64) time.Time { return time.Unix(0, int64(s*1e9)) }

var errBusy = errors.New("busy")

// ErrForeign is the error of an append to another user's history file: in
// a shared lock dir (/tmp) the history of a run id is its first writer's,
// and the others' runs are not recorded there (nor is it a fault of theirs).
var ErrForeign = errors.New("another user's history")

const appendFlags = os.O_WRONLY | os.O_APPEND | os.O_CREATE

// lockBound is how long an append waits for a rewrite to finish.
const lockBound = time.Second

// Append adds rec to the file at path in one write(2), then rewrites the
// file if it has grown past MaxLines.
func Append(path string, rec Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	f, err := openLocked(path, appendFlags, syscall.LOCK_SH)
	if err != nil {
		return err
	}
	err = write(f, line)
	fi, serr := f.Stat()
	f.Close()
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	// A line is never shorter than 40 bytes: a smaller file cannot hold
	// MaxLines of them, and is not read again here. A start marker leaves
	// the check to its run's end record, which follows: a run pays for one
	// read of its history, after its lock is released.
	if serr == nil && fi.Size() > MaxLines*40 && rec.Kind != KindStart {
		return compact(path)
	}
	return nil
}

// write is one write(2) of line (os.File.Write would retry a short write
// in a second one); the torn-history failpoint splits it in two, so that
// concurrent writers can interleave (a negative control).
func write(f *os.File, line []byte) error {
	parts := [][]byte{line}
	if failpoint.On(failpoint.TornHistory) {
		parts = [][]byte{line[:len(line)/2], line[len(line)/2:]}
	}
	for i, p := range parts {
		if i > 0 {
			time.Sleep(time.Millisecond) // a window for another writer
		}
		if n, err := syscall.Write(int(f.Fd()), p); err != nil || n < len(p) {
			return cmp.Or(err, io.ErrShortWrite)
		}
	}
	return nil
}

// openLocked opens path for appending and takes flock(how) on it, waiting
// at most lockBound, and checks that path still names the file opened.
func openLocked(path string, flag, how int) (*os.File, error) {
	deadline := time.Now().Add(lockBound)
	for {
		f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if errors.Is(err, os.ErrPermission) {
			if fi, lerr := os.Lstat(path); lerr == nil && !ownedByUs(fi) {
				return nil, fmt.Errorf("history %s: %w", path, ErrForeign)
			}
		}
		if err != nil {
			return nil, err
		}
		if err := ours(f, path); err != nil {
			f.Close()
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil && samePath(f, path) {
			return f, nil
		}
		f.Close()
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &os.PathError{Op: "flock", Path: path, Err: err}
		}
		if how == syscall.LOCK_EX || time.Now().After(deadline) {
			return nil, fmt.Errorf("history %s: %w", path, errBusy)
		}
		time.Sleep(time.Millisecond)
	}
}

// ours refuses a history file that is not a regular file of ours: in a
// shared dir (/tmp) another user may have planted one (a FIFO would block
// the writer, which O_NONBLOCK already prevents).
func ours(f *os.File, path string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !ownedByUs(fi) {
		return fmt.Errorf("history %s: %w", path, ErrForeign)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("history %s: not a regular file", path)
	}
	return nil
}

func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || int(st.Uid) == os.Geteuid()
}

// samePath reports whether path still names the open file f (a rewrite
// has not renamed another file over it).
func samePath(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// Read returns the records of the file at path in the order written, and
// how many lines it skipped: torn, foreign or of another schema. A missing
// file holds no records.
func Read(path string) (recs []Record, skipped int, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, err
	}
	recs, skipped = Parse(data)
	return recs, skipped, nil
}

// Parse is Read of the file's contents.
func Parse(data []byte) (recs []Record, skipped int) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		rec, ok := parse(line)
		if !ok {
			// A torn line (a write cut short) may have a whole line glued
			// to its end: each line starts with its kind.
			if i := bytes.LastIndex(line, []byte(`{"kind":`)); i > 0 {
				rec, ok = parse(line[i:])
			}
			skipped++
		}
		if ok {
			recs = append(recs, rec)
		}
	}
	return recs, skipped
}

func parse(line []byte) (Record, bool) {
	var rec Record
	if json.Unmarshal(line, &rec) != nil {
		return rec, false
	}
	switch rec.Kind {
	case KindRun, KindStart, KindRefused, KindTotals:
		return rec, true
	}
	return rec, false
}

// compact rewrites the file to its bound if it has more than MaxLines
// lines. One that cannot take the file's lock at once leaves it to the next
// append: someone is appending or rewriting right now.
func compact(path string) error {
	f, err := openLocked(path, appendFlags, syscall.LOCK_EX)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := os.ReadFile(path)
	if err != nil || bytes.Count(data, []byte("\n")) <= MaxLines {
		return err
	}
	recs, _ := Parse(data)
	var buf bytes.Buffer
	for _, rec := range Bound(recs) {
		line, _ := json.Marshal(rec)
		buf.Write(append(line, '\n'))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp.*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(buf.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// RemoveIdle removes the history file at path if nothing was written to it
// for idle (with dryRun, only says it would), under the file's lock: an
// append that comes meanwhile then goes to a new file.
func RemoveIdle(path string, idle time.Duration, dryRun bool) (bool, error) {
	f, err := openLocked(path, os.O_RDONLY, syscall.LOCK_EX)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, errBusy) {
			err = nil // removed meanwhile, or in use
		}
		return false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || time.Since(fi.ModTime()) < idle {
		return false, err
	}
	if dryRun {
		return true, nil
	}
	return true, os.Remove(path)
}
