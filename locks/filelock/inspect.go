package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/withlock/withlock/locks"
)

// A read-only look at a lock directory, for `withlock status`: every run
// lock with its holder and what the stale rules say of it, and the files
// that wait for `withlock gc`. Nothing here writes, takes the guard or
// reclaims: status must be safe to run at any moment.

// LockState is what one lock file amounts to.
type LockState string

const (
	StateHeld       LockState = "held"       // a live (or not provably dead) holder
	StateStale      LockState = "stale"      // the next acquirer will move it aside; see StaleReason
	StateTorn       LockState = "torn"       // unparseable but younger than TornGrace: counts as held
	StateUnreadable LockState = "unreadable" // could not be opened or read (not a regular file, EACCES)
)

// HolderLiveness is what can be said about a lock's holder from here: the
// words of proc.Liveness for a holder whose pid can be checked, else unknown.
type HolderLiveness string

const (
	HolderAlive   HolderLiveness = "alive"
	HolderDead    HolderLiveness = "dead"
	HolderReused  HolderLiveness = "pid reused"
	HolderUnknown HolderLiveness = "unknown" // another host, boot or pid namespace, or no payload
)

// LockInfo is one run lock file as Inspect found it: its Holder (Path,
// ModTime; Payload zero when the file did not parse; Orphaned: held,
// "holder dead, command still running", with the Pids of the tree that
// still run when PidsKnown) and what the stale rules say of it.
type LockInfo struct {
	locks.Holder
	Key         string // sha256hex(run_id), from the file name
	State       LockState
	StaleReason StaleReason // set when State is StateStale
	Liveness    HolderLiveness
	Err         error // why the file is unreadable, torn or corrupt
	// Tree is what the probe of the holder's tree file found (TreeNone
	// when it has none on this host or it was not probed).
	Tree TreeState
}

// LeftoverKind says what a file waiting for gc is.
type LeftoverKind string

const (
	LeftoverStale LeftoverKind = "stale" // a lock moved aside: <key>.lock.stale.<unix-ts>[.n]
	LeftoverTemp  LeftoverKind = "temp"  // a temp file a writer left: *.tmp.*
	LeftoverTree  LeftoverKind = "tree"  // a tree file no lock names: <key>.tree.<lock_id>
)

// Leftover is a file that `withlock gc` removes once it is old enough.
type Leftover struct {
	Path  string
	Kind  LeftoverKind
	Key   string    // the run lock it belongs to, when its name says
	RunID string    // for a stale file whose payload parses
	Since time.Time // moved aside (stale: from the name), else last written
	Size  int64
}

// DirReport is everything Inspect found in a lock directory.
type DirReport struct {
	Dir       string
	Locks     []LockInfo
	Leftovers []Leftover
}

// keyOf is the key a file name in the lock directory starts with
// (64 lower-case hex digits and a dot), else "".
func keyOf(name string) string {
	key, _, ok := strings.Cut(name, ".")
	if !ok || len(key) != 64 || strings.Trim(key, "0123456789abcdef") != "" {
		return ""
	}
	return key
}

// Inspect lists the run locks and leftovers in the locker's directory. An
// error means the directory itself could not be read or is unsafe; a lock
// file that cannot be read is listed with StateUnreadable and its error.
//
// With runIDs it reports only their locks: it opens their lock files (and,
// to judge them, the tree files their payloads name) by the names derived
// from the run ids, and never lists the directory, so its cost does not
// grow with the locks beside them (issue 18: a directory of 10,000 locks).
// The files waiting for gc are then not in the report: their names hold a
// time or a random part, and only a listing finds them. A run id without a
// lock file is not in Locks.
func (r *RunLocker) Inspect(runIDs ...string) (*DirReport, error) {
	rep := &DirReport{Dir: r.Dir}
	var entries []fs.DirEntry
	err := checkReadDir(r.fsys(), r.Dir)
	if err == nil && len(runIDs) == 0 {
		entries, err = os.ReadDir(r.Dir) // sorted by name
	}
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil // no directory: nothing is locked
	}
	if err != nil {
		return nil, err
	}
	keys := make(map[string]bool, len(runIDs))
	for _, id := range runIDs {
		if key := locks.Key(id); !keys[key] {
			keys[key] = true
			if info := r.inspectLock(r.LockPath(id), key); !errors.Is(info.Err, fs.ErrNotExist) {
				rep.Locks = append(rep.Locks, info)
			}
		}
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(r.Dir, name)
		if key := keyOf(name); key != "" && name == key+".lock" {
			rep.Locks = append(rep.Locks, r.inspectLock(path, key))
			continue
		}
		if kind, ok := leftoverKind(name); ok {
			rep.Leftovers = append(rep.Leftovers, r.inspectLeftover(path, kind))
		}
	}
	rep.dropLiveTrees()
	return rep, nil
}

// dropLiveTrees removes from Leftovers the tree files that a lock names:
// they are that lock's, not garbage.
func (rep *DirReport) dropLiveTrees() {
	live := make(map[string]bool)
	for _, l := range rep.Locks {
		if l.Payload.Tree {
			live[treePath(l.Path, l.Payload.LockID)] = true
		}
	}
	rep.Leftovers = slices.DeleteFunc(rep.Leftovers, func(l Leftover) bool { return live[l.Path] })
}

// readLockDir checks the directory as the run lock does (no symlink, not
// world-writable, ours or root's) and lists it in name order.
func readLockDir(fsys FS, dir string) ([]fs.DirEntry, error) {
	if err := checkReadDir(fsys, dir); err != nil {
		return nil, err
	}
	return os.ReadDir(dir) // sorted by name
}

// inspectLock reads one lock file and judges it by the stale rules.
func (r *RunLocker) inspectLock(path, key string) LockInfo {
	v, err := r.read(path)
	if err != nil {
		return LockInfo{Holder: locks.Holder{Path: path}, Key: key, State: StateUnreadable, Liveness: HolderUnknown, Err: err}
	}
	verdict := r.judge(v)
	info := LockInfo{Holder: *r.holder(path, v, verdict), Key: key, State: StateHeld,
		StaleReason: verdict.Reason, Liveness: HolderUnknown, Err: v.parseErr, Tree: verdict.Tree}
	FindPids(&info.Holder)
	if info.TreeFile != "" && info.Tree == TreeNone {
		info.Tree = TreeRunning // an alive holder holds its own tree file
	}
	switch {
	case !verdict.Held():
		info.State = StateStale
	case info.Torn:
		info.State = StateTorn
	}
	if info.Local { // a pid on this host, boot and pid namespace: it can be checked
		info.Liveness = HolderLiveness(r.live(info.Pid, info.PidStart).String())
	}
	return info
}

// leftoverKind classifies a name that gc may remove. Lock, guard and fence
// files are never leftovers, whatever else their name holds.
func leftoverKind(name string) (LeftoverKind, bool) {
	if slices.ContainsFunc([]string{".lock", ".guard", ".fence", ".tree"}, func(keep string) bool { return strings.HasSuffix(name, keep) }) {
		return "", false
	}
	switch {
	case strings.Contains(name, ".stale."):
		return LeftoverStale, true
	case strings.Contains(name, ".tmp."):
		return LeftoverTemp, true
	case strings.Contains(name, treeSuffix):
		return LeftoverTree, true
	}
	return "", false
}

// inspectLeftover stats a leftover and, for a moved-aside lock, reads the
// run id it held and when it was moved (the timestamp in its name).
func (r *RunLocker) inspectLeftover(path string, kind LeftoverKind) Leftover {
	name := filepath.Base(path)
	l := Leftover{Path: path, Kind: kind, Key: keyOf(name)}
	if fi, err := r.fsys().Lstat(path); err == nil {
		l.Since, l.Size = fi.ModTime(), fi.Size()
	}
	if kind != LeftoverStale {
		return l
	}
	// <key>.lock.stale.<unix-ts>[.n]
	ts, _, _ := strings.Cut(strings.TrimPrefix(name, l.Key+".lock.stale."), ".")
	if n, err := strconv.ParseInt(ts, 10, 64); err == nil && l.Key != "" {
		l.Since = time.Unix(n, 0)
	}
	if v, err := r.read(path); err == nil && v.parseErr == nil {
		l.RunID = v.payload.RunID
	}
	return l
}

// Age is how long ago the leftover was moved aside or last written.
func (l Leftover) Age(now time.Time) time.Duration { return now.Sub(l.Since) }

// String names a leftover for messages.
func (l Leftover) String() string {
	if l.RunID != "" {
		return fmt.Sprintf("%s (%s, run %q)", l.Path, l.Kind, l.RunID)
	}
	return fmt.Sprintf("%s (%s)", l.Path, l.Kind)
}
