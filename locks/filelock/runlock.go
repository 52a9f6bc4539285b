package filelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/internal/fsys"
	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/locks"
)

// DefaultGuardBound is how long one state transition waits for the guard.
const DefaultGuardBound = 2 * time.Second

// ErrGuardBusy: the per-run-id guard flock was not granted within its
// bound (a stopped process may hold it). Transient: retried within the
// wait, then reported as ErrUnavailable naming the guard.
var ErrGuardBusy = errors.New("guard busy")

// maxCommandLen keeps the payload far below MaxPayload.
const maxCommandLen = 4096

// RunLocker takes run locks in one directory: one lock file per run id,
// <Dir>/<sha256hex(run_id)>.lock. The zero value is not usable; build one
// with NewRunLocker.
type RunLocker struct {
	Dir        string
	TTL        time.Duration
	Command    string         // recorded in the payload for status and conflict messages
	FS         FS             // nil means the real one (fsys.OS)
	GuardBound time.Duration  // 0 means DefaultGuardBound
	Log        zerolog.Logger // events: reclaimed, renewed, released
	// OnWait, when set, is called before each wait for a held lock with
	// the holder and how long this acquirer has waited so far (the
	// command line draws its waiting line and logs the event from it).
	OnWait func(holder *locks.Holder, waited time.Duration)
	// OnReclaim, when set, is called with the payload of each stale lock
	// this locker moved aside: its holder's run ended unobserved (the run
	// history records it).
	OnReclaim func(locks.Payload)

	self Identity
	now  func() time.Time
	live func(pid int, start uint64) proc.Liveness
	// probe looks at a tree file (probeTree; tests replace it).
	probe func(path string) TreeState
	// shared: Dir is a shared sticky dir (dirsafety.go), set by each
	// attempt before it writes; lock files there are readable by all.
	shared bool
}

// judge applies the stale rules to one read of a lock file.
func (r *RunLocker) judge(v lockView) Verdict {
	return Judge(v, r.now(), r.self, r.live, r.probe)
}

// lockGuard serialises one state transition of a run id: guard is its
// guard file (see guard_linux.go).
func (r *RunLocker) lockGuard(guard string) (*os.File, error) {
	if r.knobs().unserialised {
		return nil, nil
	}
	return lockGuard(r.fsys(), guard, r.guardBound())
}

// NewRunLocker returns a locker for dir with the given TTL, knowing who we
// are (host, boot, pid namespace, start time) so stale holders on this
// host can be told apart from live ones.
func NewRunLocker(dir string, ttl time.Duration) (*RunLocker, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("ttl %v: must be positive", ttl)
	}
	self, err := SelfIdentity()
	if err != nil {
		return nil, fmt.Errorf("identify this process: %w", err)
	}
	return &RunLocker{
		Dir:   dir,
		TTL:   ttl,
		Log:   zerolog.Nop(),
		self:  self,
		now:   time.Now,
		live:  proc.Live,
		probe: probeTree,
	}, nil
}

func (r *RunLocker) fsys() FS {
	if r.FS == nil {
		return fsys.OS{}
	}
	return r.FS
}

func (r *RunLocker) guardBound() time.Duration {
	if r.GuardBound <= 0 {
		return DefaultGuardBound
	}
	return r.GuardBound
}

// LockPath is where the lock file of runID lives.
func (r *RunLocker) LockPath(runID string) string { return r.files(runID).lock }

// runFiles are the files of one run id in the lock directory, named once
// from its key.
type runFiles struct {
	lock  string // <key>.lock: the lock file
	guard string // <key>.guard: serialises its state transitions
	fence string // <key>.fence: the fencing counter, and the hold's flock (hold.go)
	spare string // <key>.tree: the spare tree file (tree.go)
	// A semaphore's or shared lock's (semaphore.go): its meta file, its
	// waiters' queue and the flocks that count them.
	sem, semq, waiting string
}

func (r *RunLocker) files(runID string) runFiles { return filesOf(r.Dir, locks.Key(runID)) }

func filesOf(dir, key string) runFiles {
	base := filepath.Join(dir, key)
	return runFiles{lock: base + ".lock", guard: base + ".guard", fence: base + ".fence", spare: base + ".tree",
		sem: base + ".sem", semq: base + ".semq", waiting: base + ".waiting"}
}

// FindPids fills Pids for an orphaned holder, from /proc.
func FindPids(h *locks.Holder) {
	if h.Orphaned && h.TreeFile != "" {
		h.Pids, h.PidsKnown = treePids(h.TreeFile)
	}
}

// TryAcquire makes one attempt. The lock being busy is a result, not an
// error: it returns (nil, holder, nil). A stale lock is moved aside and the
// lock taken in the same attempt.
func (r *RunLocker) TryAcquire(runID string) (*Lock, *locks.Holder, error) {
	return r.tryAcquire(runID, r.files(runID), nil)
}

// tryAcquire is TryAcquire by a waiter, with runID's files (named once per
// wait) and its request for the hold (nil: none), which may be granted
// already.
func (r *RunLocker) tryAcquire(runID string, files runFiles, hold *holdRequest) (*Lock, *locks.Holder, error) {
	if err := locks.CheckRunID(runID); err != nil {
		return nil, nil, err
	}
	if err := r.prepareDir(); err != nil {
		return nil, nil, err
	}
	lockPath := files.lock
	// A live holder is reported without taking the guard: a lock file is
	// only ever replaced whole, so one read is a consistent view, and the
	// waiters one release wakes would otherwise queue on the guard in front
	// of the one that takes the lock next. A waiter granted the hold skips
	// this look: its holder let the hold go only once its file was gone.
	if !hold.isGranted() {
		if v, err := r.read(lockPath); err == nil {
			if verdict := r.judge(v); verdict.Held() {
				return nil, r.holder(lockPath, v, verdict), nil
			}
		}
	}
	g, err := r.lockGuard(files.guard)
	if err != nil {
		return nil, nil, err
	}
	defer unlockGuard(g)

	v, err := r.read(lockPath)
	var seen uint64
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, err
	default:
		verdict := r.judge(v)
		if verdict.Held() {
			return nil, r.holder(lockPath, v, verdict), nil
		}
		if err := r.mayReclaim(runID, lockPath, v, verdict.Reason); err != nil {
			return nil, nil, err
		}
		r.at("reclaim:judged")
		moved, err := r.ReclaimStale(lockPath, v, verdict.Reason)
		if err != nil {
			return nil, nil, err
		}
		if !moved {
			// Someone outside the guard replaced the file; look again.
			return r.heldBy(lockPath)
		}
		if verdict.Tree == TreeEnded {
			r.removeTree(lockPath, v.payload.LockID)
		}
		seen = v.payload.FencingToken
	}
	return r.create(runID, files, seen, hold)
}

// prepareDir makes the lock directory if it is missing, checks it
// (ensureLockDir) and notes whether it is a shared one.
func (r *RunLocker) prepareDir() error {
	shared, err := ensureLockDir(r.fsys(), r.Dir)
	if err == nil {
		r.shared = shared
	}
	return err
}

// read takes one look at a lock file.
func (r *RunLocker) read(path string) (lockView, error) {
	data, fi, err := r.fsys().ReadLockFile(path, locks.MaxPayload)
	if err != nil {
		return lockView{}, err
	}
	v := lockView{path: path, modTime: fi.ModTime(), ino: inode(fi), fi: fi}
	v.payload, v.parseErr = locks.ParsePayload(data)
	return v, nil
}

func (r *RunLocker) holder(path string, v lockView, verdict Verdict) *locks.Holder {
	h := &locks.Holder{Payload: v.payload, Path: path, ModTime: v.modTime}
	if uid, ok := ownerUID(v.fi); ok && uid != euid() {
		h.Owner = userText(uid)
	}
	if v.parseErr != nil {
		h.Torn = true
		h.RecheckAt = v.modTime.Add(TornGrace)
		return h
	}
	h.Local = sameKernelView(v.payload, r.self)
	h.ForeignPid = sameKernel(v.payload, r.self) && min(v.payload.PidNS, r.self.PidNS) != 0 && v.payload.PidNS != r.self.PidNS
	h.Orphaned = verdict.Orphaned
	if v.payload.Tree && sameKernel(v.payload, r.self) {
		h.TreeFile = treePath(path, v.payload.LockID)
	}
	h.RecheckAt = v.payload.Expires()
	if h.TreeFile != "" && (verdict.Tree == TreeRunning || h.Local) {
		// Held while its tree runs, whatever the TTL: its expiry frees
		// nothing (see Judge).
		h.RecheckAt = time.Time{}
	}
	return h
}

// makeTree gives the acquisition lockID its tree file: the run id's spare
// where one can be taken, else a new file (tree.go).
func (r *RunLocker) makeTree(files runFiles, lockID string) (*os.File, error) {
	path := treePath(files.lock, lockID)
	if f := reuseTree(r.fsys(), files.spare, path, r.lockMode()); f != nil {
		return f, nil
	}
	return createTree(r.fsys(), path, r.lockMode())
}

// removeTree removes the tree file of a lock that was moved aside once its
// tree ended. A file left behind is gc's.
func (r *RunLocker) removeTree(lockPath, lockID string) {
	path := treePath(lockPath, lockID)
	if err := r.fsys().Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.Log.Warn().Err(err).Str("tree_file", path).Msg("tree file left for gc")
	}
}

// ReclaimStale moves a stale lock file aside to <lock>.stale.<unix-seconds>,
// never over an earlier stale file (a numeric suffix is added on collision),
// and checks that what it moved is the file it judged. It reports false when
// the file had been replaced in between (possible only with a writer that
// does not take the guard); that file is put back.
func (r *RunLocker) ReclaimStale(lockPath string, v lockView, reason StaleReason) (bool, error) {
	ino := v.ino
	if r.knobs().unserialised {
		ino = 0 // negative control: no post-move check
	}
	dst, err := r.moveLockAside(lockPath, ino)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil // gone already: the path is free
	case errors.Is(err, errReplaced):
		r.Log.Warn().Str("lock_file", lockPath).Msg("lock file changed while being reclaimed; put back")
		return false, nil
	case err != nil:
		return false, err
	}
	r.at("reclaim:after-rename")
	if r.OnReclaim != nil {
		r.OnReclaim(v.payload)
	}
	r.Log.Info().Str("event", "reclaimed").Str("reason", string(reason)).
		Str("lock_file", lockPath).Str("moved_to", dst).
		Int("holder_pid", v.payload.Pid).Str("run_id", v.payload.RunID).Msg("reclaimed stale lock")
	return true, nil
}

// create writes the payload to a temp file and links it into place: the
// lock path never shows a half-written file. Whatever happens, the temp
// file is removed. The temp file is an O_TMPFILE where the filesystem has
// them: it has no name until it is linked, so there is none to remove, and
// waiters watching the directory are not woken by its removal (with eight
// waiters, a wake-up each per acquisition). Elsewhere it is a named file.
//
// The new lock keeps the hold (hold.go): the one a waiter was granted, or
// else the fence file the token was just written through, if no one else
// has it. Its payload says which.
func (r *RunLocker) create(runID string, files runFiles, seen uint64, hold *holdRequest) (*Lock, *locks.Holder, error) {
	lockPath := files.lock
	granted := hold.isGranted()
	// A granted hold is the fence file open and flocked already: the
	// counter is bumped through it rather than through a second open.
	var grantedFence *os.File
	if granted {
		grantedFence = hold.f
	}
	token, fence, err := r.nextToken(files.fence, seen, grantedFence)
	if err != nil {
		return nil, nil, err
	}
	var holdFile *os.File
	ownHold := !granted && r.tryHold(fence) // the fence file opened here keeps the hold
	if ownHold {
		holdFile = fence
	} else if fence != grantedFence {
		fence.Close()
	}
	// The tree file (tree.go), locked before any payload names it. Where
	// it cannot be made (no flock, no descriptor to spare) the lock goes
	// on without it, judged by its pid and TTL alone.
	lockID := randomID()
	var tree *os.File
	if !r.knobs().noTree && !failpoint.On(failpoint.NoTree) {
		tree, err = r.makeTree(files, lockID)
		if err != nil && !errors.Is(err, errors.ErrUnsupported) {
			r.Log.Warn().Err(err).Msg("no tree file: the lock is bound to withlock's pid and TTL only")
		}
	}
	// Whatever fails from here on lets the hold and the tree go: the lock
	// was not taken.
	failed := func() {
		if ownHold {
			holdFile.Close()
		}
		if tree != nil {
			r.removeTree(lockPath, lockID)
			tree.Close()
		}
	}
	now := r.now()
	p := locks.Payload{
		RunID:        runID,
		LockID:       lockID,
		Pid:          r.self.Pid,
		CreatedAt:    locks.Epoch(now),
		ExpiresAt:    locks.Epoch(now.Add(r.TTL)),
		Host:         r.self.Host,
		BootID:       r.self.BootID,
		PidNS:        r.self.PidNS,
		PidStart:     r.self.PidStart,
		Command:      locks.TruncateEscaped(r.Command, maxCommandLen),
		FencingToken: token,
		Hold:         ownHold || granted,
		Tree:         tree != nil,
	}
	enc, err := p.Encode()
	if err == nil {
		err = r.writeLockFile(lockPath, enc, lockID)
	}
	if err != nil {
		failed()
		if errors.Is(err, fs.ErrExist) {
			// A writer that does not take the guard got there first.
			return r.heldBy(lockPath)
		}
		return nil, nil, err
	}
	r.at("acquire:after-link")
	if !ownHold {
		holdFile = hold.take()
	}
	return &Lock{r: r, RunID: runID, Path: lockPath, files: files, payload: p, written: enc, hold: holdFile, tree: tree}, nil, nil
}

// writeLockFile writes enc to an unnamed temp file, or a named one where
// the filesystem has no O_TMPFILE, and links it to path (see create). It
// fails with fs.ErrExist when path exists.
func (r *RunLocker) writeLockFile(path string, enc []byte, lockID string) error {
	fsys := r.fsys()
	f, err := fsys.OpenUnnamed(r.Dir, r.lockMode())
	if err == nil {
		defer f.Close()
		if _, err := f.Write(enc); err != nil {
			return err
		}
		r.at("acquire:after-temp")
		return fsys.LinkUnnamed(f, path)
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return r.viaTemp(path, path+".tmp."+lockID, enc, "acquire:after-temp", true)
}

// viaTemp writes data to the new file tmp and puts it at path (renamed
// over what is there, or with link only where nothing is, else
// fs.ErrExist), so that path never shows a half-written file; point marks
// the moment between the two (at). A linked or failed temp file is
// removed (a rename leaves none); one left behind is gc's.
func (r *RunLocker) viaTemp(path, tmp string, data []byte, point string, link bool) error {
	fsys := r.fsys()
	if err := fsys.WriteNew(tmp, data, r.lockMode()); err != nil {
		return err
	}
	r.at(point)
	place := fsys.Rename
	if link {
		place = fsys.Link
	}
	err := place(tmp, path)
	if err == nil && !link {
		return nil // renamed: no temp file is left to remove
	}
	if rerr := fsys.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		r.Log.Warn().Err(rerr).Str("temp_file", tmp).Msg("temp file left for gc")
	}
	return err
}

// heldBy reads the lock file at path once more and names its holder.
func (r *RunLocker) heldBy(path string) (*Lock, *locks.Holder, error) {
	v, err := r.read(path)
	if err != nil {
		return nil, nil, err
	}
	return nil, r.holder(path, v, r.judge(v)), nil
}

// nextToken bumps the run id's fencing counter in its sidecar file, which
// gc and break never remove. The counter is rewritten in place at a fixed
// width under the guard: no temp file, no new inode on every acquisition.
// The counter file is returned open, for the hold: open, the one given
// (a granted hold's, which stays open whatever happens), or else one
// opened here.
func (r *RunLocker) nextToken(path string, seen uint64, open *os.File) (uint64, *os.File, error) {
	f := open
	if f == nil {
		var err error
		if f, err = r.fsys().OpenCounter(path); err != nil {
			return 0, nil, explainDenied(r.fsys(), "fence file", path, err)
		}
	}
	fail := func(err error) (uint64, *os.File, error) {
		if f != open {
			f.Close()
		}
		return 0, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkOwned("fence file", path, fi)
	}
	if err != nil {
		return fail(err)
	}
	token, err := bumpCounter(f, path, seen, fenceFloor(r.now()), r.Log)
	if err != nil {
		return fail(err) // the caller names the run id
	}
	return token, f, nil
}

// ErrFenceExhausted: the fencing token is at its largest value and cannot
// grow (SPEC §3: it never wraps). Only a foreign writer can get it there.
var ErrFenceExhausted = errors.New("fencing token cannot grow")

// fenceFloor is the smallest token an acquisition at now may get: the
// microseconds since the epoch. A token is max(last + 1, floor), so it
// grows even when the counter is gone — a reboot empties /run and /tmp, a
// cleanup removes the sidecar, a foreign writer leaves garbage in it — as
// long as the clock has moved on since the last acquisition (one a
// microsecond at most is far more than a lock does). Microseconds reach
// 2^63 in the year 294,000: the token stays a positive int64 for any store.
func fenceFloor(now time.Time) uint64 {
	if us := now.UnixMicro(); us > 0 {
		return uint64(us)
	}
	return 0
}

// bumpCounter reads the counter, writes and returns the next token:
// max(stored + 1, seen + 1, floor). seen is the token of a lock just
// reclaimed. A counter that does not parse is logged and counted as lost
// (the floor and seen still keep the token growing); one at the largest
// value fails with ErrFenceExhausted rather than wrap to 0.
func bumpCounter(f *os.File, path string, seen, floor uint64, log zerolog.Logger) (uint64, error) {
	// One pread: the counter is 21 bytes, and a read of a regular file
	// that returns less than asked for has reached its end (ReadAt would
	// ask again to hear so).
	var buf [64]byte
	n, err := pread(f, buf[:], 0)
	if err != nil {
		return 0, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	var stored uint64
	if text := strings.TrimSpace(string(buf[:n])); text != "" {
		if stored, err = strconv.ParseUint(text, 10, 64); err != nil {
			log.Warn().Str("event", "fence_recovered").Str("fence_file", path).Str("content", locks.OneLine(text)).
				Msg("fencing counter unreadable; the token continues from the clock")
			stored = 0
		}
	}
	last := max(stored, seen)
	if last == math.MaxUint64 {
		return 0, fmt.Errorf("%w: %s or the lock holds %d, the largest token: remove both (withlock break --force, then the fence file) once no store relies on it", ErrFenceExhausted, path, last)
	}
	token := max(last+1, floor)
	text := counterText(token)
	if _, err := f.WriteAt(text, 0); err != nil {
		return 0, err
	}
	if n > len(text) {
		if err := f.Truncate(int64(len(text))); err != nil {
			return 0, err
		}
	}
	return token, nil
}

// counterText is the counter's form on disk: 20 digits, zero-padded, and a
// newline (every uint64 fits). The fixed width lets a rewrite in place never
// leave the tail of a longer old value behind.
func counterText(token uint64) []byte { return fmt.Appendf(nil, "%020d\n", token) }

// Acquire takes the lock, waiting up to wait for it (wait < 0: forever;
// 0: one attempt), in the one wait loop (wait.go). A holder on this host
// that keeps the hold (hold.go) is waited for in the hold's queue; any
// other, on the lock file (inotify), its pid (pidfd) or its tree file.
// Faults that are not contention end after a few attempts with
// ErrUnavailable. ctx ending aborts the wait with context.Cause(ctx).
func (r *RunLocker) Acquire(ctx context.Context, runID string, wait time.Duration) (*Lock, error) {
	// The waiter's place in the hold's queue, asked for once a holder on
	// this host keeps the hold; given up on return unless the new lock
	// took it.
	var hold *holdRequest
	defer func() { hold.abandon() }()
	var lock *Lock
	files := r.files(runID)
	err := r.loop(ctx, waitFor{
		runID: runID,
		start: r.now(),
		wait:  wait,
		names: []string{filepath.Base(files.lock)},
		try: func() (bool, []*locks.Holder, error) {
			l, holder, err := r.tryAcquire(runID, files, hold)
			lock = l
			if err != nil || l != nil {
				return l != nil, nil, err
			}
			return false, []*locks.Holder{holder}, nil
		},
		queue: func(held []*locks.Holder) (*holdRequest, bool, bool) {
			if h := held[0]; h.Hold && h.Local && !hold.isGranted() {
				if !hold.live() {
					if hold = r.requestHold(files.fence); hold.isGranted() {
						return hold, false, true // let go just now: look again at once
					}
				}
				if hold != nil {
					return hold, true, false
				}
			}
			return hold, false, false
		},
	})
	return lock, err
}

// maxFaults is how many attempts in a row may fail with an error that is
// not contention before Acquire gives up.
const maxFaults = 4

// fault decides whether an attempt's error ends the wait. An unsafe
// directory ends it at once; a busy guard is retried while the wait lasts;
// other errors (EACCES, EROFS, ENOSPC, ENOTDIR, a persistent ENOENT) are
// retried maxFaults times, recreating a deleted directory on the way.
func (r *RunLocker) fault(runID string, err error, faults *int, left time.Duration) (error, bool) {
	switch {
	case errors.Is(err, locks.ErrInvalid) || errors.Is(err, locks.ErrModeMismatch):
		return err, true
	case errors.Is(err, ErrUnsafeDir) || errors.Is(err, ErrNotOurs) || errors.Is(err, ErrFenceExhausted):
	case errors.Is(err, ErrGuardBusy):
		if left > 0 {
			return nil, false
		}
	default:
		*faults++
		r.Log.Debug().Err(err).Int("attempt", *faults).Str("run_id", runID).Msg("lock attempt failed")
		if *faults < maxFaults {
			return nil, false
		}
	}
	return fmt.Errorf("%w: %w", locks.ErrUnavailable, err), true
}
