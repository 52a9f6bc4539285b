package filelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks"
)

// Semaphores (`--max N`) and shared locks (`--shared`), SPEC §6, are built
// from ordinary run locks. Slot k of run id X is the run lock of the derived
// run id SlotRunID(X, mode, k) = X + "\x00" + mode + " " + k. A NUL cannot
// appear in a run id given on a command line, so a derived id never names a
// user's own lock. Each slot therefore has its own lock file, guard, fencing
// counter, tree file (the tree-bound liveness), TTL renewal, stale judge and
// status entry, exactly as a run lock.
//
// X's own guard serialises the decisions that span slots: the mode and N the
// run id is used with (the meta file <key>.sem), which slot a newcomer takes,
// and the exclusion between X's exclusive holder (X's own lock file, taken by
// a plain `withlock run X`) and the slot holders. Slot guards nest inside X's
// guard; nothing takes X's guard while it holds a slot's.
//
// The exclusive holder's lock file doubles as the writer-intent marker: a
// plain acquirer takes X's lock first and only then waits for the slot
// holders to leave (AwaitNoSharers), and a newcomer to a slot waits while X's
// lock is held. So a stream of new shared holders cannot starve a waiting
// exclusive one: once it has X's lock, nobody new gets in. This is the policy
// of Go's sync.RWMutex (writer preference); exclusive acquirers among
// themselves queue on X's lock as usual.

// SlotLock is one held slot of a semaphore or shared lock: a run lock of
// the derived run id, and what the child is told about it.
type SlotLock struct {
	*Lock
	Base string // the run id the user named
	Mode locks.SemMode
	Slot int // 0 … Max−1 for ModeMax
	Max  int // 0 for ModeShared
}

// Env is the child's environment: WITHLOCK_RUN_ID is the run id the user
// named; WITHLOCK_SLOT and WITHLOCK_MAX (semaphores) or WITHLOCK_SHARED=1
// say what is held. The lock file and fencing token are the slot's own.
func (l *SlotLock) Env() []string {
	env := l.Lock.Env()
	env[0] = "WITHLOCK_RUN_ID=" + l.Base // Lock.Env names the run id first
	if l.Mode == locks.ModeShared {
		return append(env, "WITHLOCK_SHARED=1", "WITHLOCK_SLOT="+strconv.Itoa(l.Slot))
	}
	return append(env, "WITHLOCK_SLOT="+strconv.Itoa(l.Slot), "WITHLOCK_MAX="+strconv.Itoa(l.Max))
}

// semMeta is the meta file <key>.sem: how the run id's slots are used and
// how many slots there are to look at (Max, or the high-water mark of
// shared holders). It is rewritten, atomically, only under X's guard, and
// outlives its holders (like the fence file): the next acquirer in another
// mode rewrites it once no slot is held.
type semMeta struct {
	RunID string        `json:"run_id"`
	Mode  locks.SemMode `json:"mode"`
	Max   int           `json:"max"`
	Slots int           `json:"slots"`
}

// SlotsOf reports how runID is used as a semaphore or shared lock: found is
// false when it never was (no meta file). A corrupt meta file is read as
// readOrRecoverMeta rebuilds it from the slots held, without writing it
// back: status and break must see the slots still held (max is then the
// least N that fits them).
func (r *RunLocker) SlotsOf(runID string) (mode locks.SemMode, max, slots int, found bool, err error) {
	m, found, _, err := r.readOrRecoverMeta(runID)
	return m.Mode, m.Max, m.Slots, found, err
}

func (r *RunLocker) readMeta(runID string) (semMeta, bool, error) {
	path := r.files(runID).sem
	data, _, err := r.fsys().ReadLockFile(path, locks.MaxPayload)
	if errors.Is(err, fs.ErrNotExist) {
		return semMeta{}, false, nil
	}
	if err != nil {
		return semMeta{}, false, err
	}
	var m semMeta
	if err := json.Unmarshal(data, &m); err != nil || (m.Mode != locks.ModeMax && m.Mode != locks.ModeShared) || m.Slots < 0 || m.Slots > locks.MaxSlots {
		return semMeta{}, false, fmt.Errorf("%w: %s (remove it once no holder of run %q runs)", errCorruptMeta, path, runID)
	}
	return m, true, nil
}

// errCorruptMeta is a meta file that does not parse (garbage written by
// hand, a torn copy restored from a backup).
var errCorruptMeta = errors.New("semaphore meta file is corrupt")

// readOrRecoverMeta is readMeta that heals a corrupt meta file instead of
// failing on it for ever: the slots still held are found by their own
// lock files (one listing of the dir, only in this case), and the meta
// is rebuilt from them: their mode, and as many slots as the highest one
// held. With no slot held the run id is as if never used with slots
// (found is false). healed reports that the file was corrupt; under
// runID's guard the caller then writes the meta again.
func (r *RunLocker) readOrRecoverMeta(runID string) (m semMeta, found, healed bool, err error) {
	m, found, err = r.readMeta(runID)
	if !errors.Is(err, errCorruptMeta) {
		return m, found, false, err
	}
	entries, lerr := readLockDir(r.fsys(), r.Dir)
	if lerr != nil {
		return semMeta{}, false, false, fmt.Errorf("%w; listing %s to recover it: %w", err, r.Dir, lerr)
	}
	m = semMeta{RunID: runID}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		path := filepath.Join(r.Dir, e.Name())
		v, rerr := r.read(path)
		if rerr != nil || v.parseErr != nil {
			continue
		}
		base, mode, k, ok := locks.ParseSlotRunID(v.payload.RunID)
		if !ok || base != runID || path != r.LockPath(v.payload.RunID) || !r.judge(v).Held() {
			continue
		}
		if m.Mode != "" && m.Mode != mode {
			// Slots of both kinds held: no meta could describe that.
			return semMeta{}, false, false, err
		}
		m.Mode = mode
		m.Slots = max(m.Slots, k+1)
	}
	if m.Mode == "" { // no slot held
		return semMeta{}, false, true, nil
	}
	if m.Mode == locks.ModeMax {
		m.Max = m.Slots // the least N that fits the slots held
	}
	return m, true, true, nil
}

func (r *RunLocker) writeMeta(runID string, m semMeta) error {
	path := r.files(runID).sem
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return r.viaTemp(path, path+".tmp."+randomID(), append(data, '\n'), "sem:after-temp", false)
}

// slotNames are the base names of the lock files of runID's first n slots.
func slotNames(runID string, mode locks.SemMode, n int) []string {
	names := make([]string, n)
	for k := range names {
		names[k] = locks.Key(locks.SlotRunID(runID, mode, k)) + ".lock"
	}
	return names
}

// heldSlots reads the slots the meta file names and returns their holders
// (no guard needed: a lock file is only ever replaced whole).
func (r *RunLocker) heldSlots(runID string, m semMeta) ([]*locks.Holder, error) {
	var held []*locks.Holder
	for k := 0; k < m.Slots; k++ {
		path := r.LockPath(locks.SlotRunID(runID, m.Mode, k))
		v, err := r.read(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if verdict := r.judge(v); verdict.Held() {
			held = append(held, r.holder(path, v, verdict))
		}
	}
	return held, nil
}

// trySlot makes one attempt at a slot of runID: under X's guard, it checks
// that no exclusive holder has X, that the meta file agrees with mode and
// max (or that nobody holds a slot of the other kind, and rewrites it), and
// takes the lowest free slot. Busy is a result: the holders in the way are
// returned (X's holder alone when it has X).
func (r *RunLocker) trySlot(runID string, mode locks.SemMode, max int) (*SlotLock, []*locks.Holder, error) {
	if err := r.prepareDir(); err != nil { // a shared sticky dir works as for a run lock
		return nil, nil, err
	}
	files := r.files(runID)
	g, err := r.lockGuard(files.guard)
	if err != nil {
		return nil, nil, err
	}
	defer unlockGuard(g)

	xPath := files.lock
	switch v, err := r.read(xPath); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, err
	default:
		if verdict := r.judge(v); verdict.Held() {
			return nil, []*locks.Holder{r.holder(xPath, v, verdict)}, nil
		}
	}

	want := semMeta{RunID: runID, Mode: mode, Max: max}
	if mode == locks.ModeMax {
		want.Slots = max
	}
	m, found, healed, err := r.readOrRecoverMeta(runID)
	if err != nil {
		return nil, nil, err
	}
	// A rebuilt meta's max is the least N that fits the slots held: any
	// larger N of the same mode fits them too.
	fits := m.Mode == mode && (m.Max == max || healed && m.Max < max)
	if found && !fits {
		held, err := r.heldSlots(runID, m)
		if err != nil {
			return nil, nil, err
		}
		if len(held) > 0 {
			return nil, nil, locks.MaxMismatch(runID, max, m.Max, *held[0])
		}
		found = false
	}
	if healed {
		r.Log.Warn().Str("event", "sem_recovered").Str("path", files.sem).
			Msg("corrupt semaphore meta file: rewritten from the slots still held")
	}
	if !found || healed {
		if found && m.Slots > want.Slots {
			// Shared keeps the slots' high-water mark, which an exclusive
			// run reads to find every sharer.
			want.Slots = m.Slots
		}
		m = want
		if err := r.writeMeta(runID, m); err != nil {
			return nil, nil, err
		}
	}

	limit := m.Slots
	if mode == locks.ModeShared {
		limit = min(m.Slots+1, locks.MaxSlots) // every slot in use: one more
	}
	var held []*locks.Holder
	for k := 0; k < limit; k++ {
		id := locks.SlotRunID(runID, mode, k)
		if failpoint.On(failpoint.BrokenSlots) {
			id += "\x00" + randomID() // negative control: a lock of its own
		}
		lock, h, err := r.TryAcquire(id)
		if err != nil {
			return nil, nil, err
		}
		if lock == nil {
			held = append(held, h)
			continue
		}
		if k >= m.Slots {
			m.Slots = k + 1
			if err := r.writeMeta(runID, m); err != nil {
				lock.Release()
				return nil, nil, err
			}
		}
		return &SlotLock{Lock: lock, Base: runID, Mode: mode, Slot: k, Max: max}, nil, nil
	}
	if mode == locks.ModeShared {
		return nil, nil, fmt.Errorf("run %q: more than %d shared holders at once", runID, locks.MaxSlots)
	}
	return nil, held, nil
}

// AcquireSlot takes a slot of runID: one of max slots (a counting
// semaphore), or with max 0 a shared slot. It waits up to wait (< 0:
// forever; 0: one attempt) like Acquire, and never spins. Semaphore waiters
// queue on a flock of <key>.semq: only the first in line watches the slots
// (inotify on their lock files, the end of each holder's tree), so a freed
// slot wakes one waiter, which lets the next in line up once it has a slot
// or gives up. A dead holder's slot is reclaimed by the stale rules of the
// run lock, the tree rule included. Shared waiters, which wait only for an
// exclusive holder, all wake when it leaves.
func (r *RunLocker) AcquireSlot(ctx context.Context, runID string, max int, wait time.Duration) (*SlotLock, error) {
	if err := locks.CheckSlotRunID(runID); err != nil {
		return nil, err
	}
	if max < 0 || max > locks.MaxSlots {
		return nil, &locks.InvalidError{What: fmt.Sprintf("--max %d", max), Reason: fmt.Sprintf("must be 1 … %d", locks.MaxSlots)}
	}
	mode := locks.ModeMax
	if max == 0 {
		mode = locks.ModeShared
	}
	var queue *holdRequest
	var waiting func()
	defer func() {
		queue.abandon()
		if waiting != nil {
			waiting()
		}
	}()
	var lock *SlotLock
	err := r.loop(ctx, waitFor{
		runID: runID,
		start: r.now(),
		wait:  wait,
		// X's lock file, and a semaphore's slots (max is 0 when shared).
		names: append([]string{locks.Key(runID) + ".lock"}, slotNames(runID, mode, max)...),
		try: func() (bool, []*locks.Holder, error) {
			l, held, err := r.trySlot(runID, mode, max)
			lock = l
			return l != nil, held, err
		},
		queue: func(held []*locks.Holder) (*holdRequest, bool, bool) {
			if waiting == nil {
				waiting = r.markWaiting(runID)
			}
			exclusive := len(held) == 1 && held[0].RunID == runID
			if mode == locks.ModeMax && !exclusive && !queue.live() {
				queue = r.requestQueue(runID)
			}
			// Not first in line: the kernel wakes us when the one in
			// front has a slot or gives up. The first in line watches.
			return queue, queue.pending() && mode == locks.ModeMax && !exclusive, false
		},
		heldError: func(held []*locks.Holder, now time.Time) error {
			if mode == locks.ModeShared || (len(held) == 1 && held[0].RunID == runID) {
				return nil // a *HeldError naming the one in the way
			}
			out := make([]locks.Holder, len(held))
			for i, h := range held {
				FindPids(h)
				out[i] = *h
			}
			return &locks.SlotsHeldError{RunID: runID, Max: max, Holders: out}
		},
	})
	return lock, err
}

// AwaitNoSharers is the second half of an exclusive acquisition of runID
// (a plain `withlock run`): with l (runID's own lock) held, so that nobody
// new takes a slot, it waits until no slot holder of runID is left,
// renewing l meanwhile. wait counts from start. When the wait runs out it
// returns a *HeldError naming a slot holder; l is the caller's to release.
// A run id never used with slots costs one failed open.
func (r *RunLocker) AwaitNoSharers(ctx context.Context, l *Lock, start time.Time, wait time.Duration) error {
	m, found, _, err := r.readOrRecoverMeta(l.RunID) // healed by the next slot taker
	if err != nil {
		return fmt.Errorf("%w: %w", locks.ErrUnavailable, err)
	}
	if !found || failpoint.On(failpoint.BrokenSlots) {
		return nil
	}
	return r.loop(ctx, waitFor{
		runID: l.RunID,
		start: start,
		wait:  wait,
		names: slotNames(l.RunID, m.Mode, m.Slots),
		renew: l,
		try: func() (bool, []*locks.Holder, error) {
			held, err := r.heldSlots(l.RunID, m)
			return err == nil && len(held) == 0, held, err
		},
	})
}
