// Package history keeps what happened to a run id while nobody watched
// (SPEC §8): one JSON line per run that withlock started, and one per start
// it refused, in <sha256hex(run_id)>.runs beside the lock.
//
// A run appends its lines with one write(2) on a descriptor opened
// O_APPEND, so concurrent writers never interleave or lose a line. The
// file is bounded: past MaxLines lines it is compacted in place to the
// last KeepRuns runs and KeepRefused refused starts, and what it drops is
// folded into one totals line, so that counters never go down.
//
// Appends and the compaction are serialised by flock(2) on the .runs file
// itself, not by the run id's guard, which serialises lock state
// transitions on the acquire path that history must never slow down: an
// appender takes LOCK_SH, the compaction LOCK_EX. The compaction rewrites
// the same inode, so an appender never has to check which file it opened.
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
	KindRun     = "run"     // a run that ended (or was found ended unobserved)
	KindRefused = "refused" // a start refused: conflict, or the wait ran out
	KindTotals  = "totals"  // what a compaction dropped, counted
)

// Results of a run. ResultUnobserved is a run whose withlock was killed: its
// stale lock was reclaimed by the next run, which wrote this record.
const (
	ResultExit       = "exit"
	ResultSignal     = "signal"
	ResultTimeout    = "timeout"
	ResultLockLost   = "lock_lost"
	ResultError      = "error"
	ResultUnobserved = "ended unobserved"
)

// Bounds of the file.
const (
	KeepRuns    = 100
	KeepRefused = 50
	MaxLines    = 2 * KeepRuns
)

// Suffix ends the name of a history file.
const Suffix = ".runs"

// Record is one line of the file: a run (Run), a refused start (At, Reason,
// Holder) or the totals of a compaction (Runs, Conflicts, Skipped since
// SkippedSince). Kind is its first field: a line glued to a torn one is
// found again by it (Parse).
type Record struct {
	Run

	At     float64 `json:"at,omitempty"`
	Reason string  `json:"reason,omitempty"` // conflict | wait
	Holder *Holder `json:"holder,omitempty"`

	Runs         map[string]int `json:"runs,omitempty"`
	Conflicts    int            `json:"conflicts,omitempty"`
	Skipped      int            `json:"skipped,omitempty"`
	SkippedSince float64        `json:"skipped_since,omitempty"`
}

// Run is the part of a Record that a run's line holds, and the kind and
// run id of every line. A run's record is written as its Run alone
// (Marshal).
type Run struct {
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

// Marshal is rec as a line of the file holds it (without the newline). A
// run's record, the line every run writes, is its Run, written member for
// member as encoding/json writes it (TestRunMarshalMatchesJSON).
func (rec Record) Marshal() ([]byte, error) {
	if r := rec.Run; r.Kind == KindRun {
		line := locks.JSONLine(r, 2, "kind", r.Kind, "run_id", r.RunID, "started_at", r.StartedAt, "ended_at", r.EndedAt,
			"result", r.Result, "exit_code", r.ExitCode, "signal", r.Signal, "message", r.Message, "pid", r.Pid, "host", r.Host,
			"fencing_token", r.FencingToken, "command", r.Command, "slot", r.Slot, "shared", r.Shared)
		return line[:len(line)-1], nil
	}
	return json.Marshal(rec)
}

var errBusy = errors.New("busy")

// ErrForeign is the error of an append to another user's history file, or
// of its removal by gc (which then leaves it alone): in a shared lock dir
// (/tmp) the history of a run id is its first writer's, and the others'
// runs are not recorded there (nor is it a fault of theirs).
var ErrForeign = errors.New("another user's history")

// lockBound is how long an append waits for a compaction to finish.
const lockBound = time.Second

// Append adds recs to the file at path in one write(2), then compacts the
// file if it has grown past MaxLines.
func Append(path string, recs ...Record) error {
	var buf []byte
	for _, rec := range recs {
		line, err := rec.Marshal()
		if err != nil {
			return err
		}
		buf = append(append(buf, line...), '\n')
	}
	f, size, err := openLocked(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, syscall.LOCK_SH)
	if err != nil {
		return err
	}
	err = write(f, buf)
	f.Close()
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	// The file is read again only when an append crosses a checkEvery
	// boundary: a line is never shorter than 40 bytes, so at most slack
	// lines come between two checks, and a check compacts a file that has
	// more than MaxLines-slack lines.
	if end := size + int64(len(buf)); end/checkEvery != size/checkEvery && end > (MaxLines-slack)*40 {
		return compact(path)
	}
	return nil
}

const (
	checkEvery = 1024
	slack      = checkEvery/40 + 4
)

// write is one write(2) of buf (os.File.Write would retry a short write
// in a second one); the torn-history failpoint splits it in two, so that
// concurrent writers can interleave (a negative control).
func write(f *os.File, buf []byte) error {
	parts := [][]byte{buf}
	if failpoint.On(failpoint.TornHistory) {
		parts = [][]byte{buf[:len(buf)/2], buf[len(buf)/2:]}
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

// openLocked opens path and takes flock(how) on it, waiting at most
// lockBound for LOCK_SH (LOCK_EX does not wait). It refuses a file that is
// not a regular file of ours: in a shared dir (/tmp) another user may have
// planted one (a FIFO would block, which O_NONBLOCK prevents). One that
// was removed meanwhile (gc --history) is opened again. It returns the
// file's size.
func openLocked(path string, flag, how int) (*os.File, int64, error) {
	for {
		f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
		if foreign(path, err) {
			return nil, 0, fmt.Errorf("history %s: %w", path, ErrForeign)
		}
		if err != nil {
			return nil, 0, err
		}
		var st syscall.Stat_t
		if err = flock(f, path, how); err == nil {
			err = syscall.Fstat(int(f.Fd()), &st)
		}
		switch {
		case err != nil:
		case int(st.Uid) != os.Geteuid():
			err = fmt.Errorf("history %s: %w", path, ErrForeign)
		case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
			err = fmt.Errorf("history %s: not a regular file", path)
		case st.Nlink == 0 && flag&os.O_CREATE != 0:
			f.Close()
			continue
		default:
			return f, st.Size, nil
		}
		f.Close()
		return nil, 0, err
	}
}

// foreign reports whether err is an open of path refused because the file
// is another user's (ErrForeign).
func foreign(path string, err error) bool {
	var st syscall.Stat_t // looked at only when the open was refused
	return errors.Is(err, os.ErrPermission) && syscall.Lstat(path, &st) == nil && int(st.Uid) != os.Geteuid()
}

func flock(f *os.File, path string, how int) error {
	deadline := time.Now().Add(lockBound)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return &os.PathError{Op: "flock", Path: path, Err: err}
		}
		if how == syscall.LOCK_EX || time.Now().After(deadline) {
			return fmt.Errorf("history %s: %w", path, errBusy)
		}
		time.Sleep(time.Millisecond)
	}
}

// Read returns the records of the file at path in the order written, and
// how many lines it skipped: torn, foreign or of another schema. A missing
// file holds no records, and so does one another user keeps that we may not
// read (a shared dir: as for Append, their history is theirs).
func Read(path string) (recs []Record, skipped int, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) || foreign(path, err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	recs, skipped = Parse(data)
	return recs, skipped, err
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

func parse(line []byte) (rec Record, ok bool) {
	err := json.Unmarshal(line, &rec)
	return rec, err == nil && (rec.Kind == KindRun || rec.Kind == KindRefused || rec.Kind == KindTotals)
}

// compact rewrites the file in place to its bound if it has more than
// MaxLines-slack lines. One that cannot take the file's lock at once leaves it
// to the next append: someone is appending or compacting right now. The
// new contents are written over the old before the file is cut to their
// length: a crash in between leaves lines twice (counted twice), never
// fewer.
func compact(path string) error {
	f, _, err := openLocked(path, os.O_RDWR, syscall.LOCK_EX)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil || bytes.Count(data, []byte("\n")) <= MaxLines-slack {
		return err
	}
	recs, _ := Parse(data)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, rec := range Bound(recs) {
		enc.Encode(rec)
	}
	if _, err := f.WriteAt(buf.Bytes(), 0); err != nil {
		return err
	}
	return f.Truncate(int64(buf.Len()))
}

// RemoveIdle removes the history file at path if nothing was written to it
// for idle (with dryRun, only says it would), under the file's lock. Another
// user's is left alone, even by root: a run id's history is its writer's.
func RemoveIdle(path string, idle time.Duration, dryRun bool) (bool, error) {
	f, _, err := openLocked(path, os.O_RDONLY, syscall.LOCK_EX)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, errBusy) || errors.Is(err, ErrForeign) {
			err = nil // removed meanwhile, in use, or another user's (a shared dir: theirs to remove)
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
