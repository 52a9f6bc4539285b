package filelock

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks"
)

// pausePoint makes a locker stop at one named point until released, and
// tells the test when it got there.
type pausePoint struct {
	reached chan struct{}
	resume  chan struct{}
	once    sync.Once
}

func pauseAt(r *RunLocker, point string) *pausePoint {
	p := &pausePoint{reached: make(chan struct{}), resume: make(chan struct{})}
	knobsOf(r).hook = func(at string) {
		if at != point {
			return
		}
		p.once.Do(func() {
			close(p.reached)
			<-p.resume
		})
	}
	return p
}

// guardWatch tells the test when a locker asks for its guard, so a second
// transition is known to be in flight before the first one resumes.
type guardWatch struct {
	osFS
	asked chan struct{}
	once  sync.Once
}

func (g *guardWatch) OpenGuard(path string) (*os.File, error) {
	g.once.Do(func() { close(g.asked) })
	return g.osFS.OpenGuard(path)
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	testwait.Recv(t, ch, 10*time.Second, what)
}

// expire rewrites a held lock's expires_at into the past, as if its holder
// had been stopped past its TTL, and drops its tree: a holder alive here
// with a tree file is never reclaimed by its TTL (Judge), so the lock a
// reclaimer races for is one only the TTL judges — a seed writer's, or one
// whose tree file cannot be probed.
func expire(t *testing.T, l *Lock) {
	t.Helper()
	p := readPayload(t, l.Path)
	p.ExpiresAt = locks.Epoch(time.Now().Add(-time.Second))
	p.Tree = false
	writeLockFile(t, l.Path, p, time.Time{})
}

// owners counts the lockers whose lock_id is on disk.
func owners(t *testing.T, path string, ls ...*Lock) int {
	t.Helper()
	p := readPayload(t, path)
	n := 0
	for _, l := range ls {
		if l != nil && l.LockID() == p.LockID {
			n++
		}
	}
	return n
}

// raceTwoReclaimers: A judges the stale lock and pauses before moving it;
// B tries meanwhile; A resumes. Returns how many of them believe they hold.
func raceTwoReclaimers(t *testing.T, serialised bool) int {
	dir := t.TempDir()
	seed := newTestLocker(t, dir, time.Minute)
	expire(t, mustAcquire(t, seed, "job"))

	a, b := newTestLocker(t, dir, time.Minute), newTestLocker(t, dir, time.Minute)
	knobsOf(a).unserialised, knobsOf(b).unserialised = !serialised, !serialised
	watch := &guardWatch{asked: make(chan struct{})}
	b.FS = watch
	pa := pauseAt(a, "reclaim:judged")

	var la, lb *Lock
	var errA, errB error
	doneA, doneB := make(chan struct{}), make(chan struct{})
	go func() { defer close(doneA); la, _, errA = a.TryAcquire("job") }()
	waitClosed(t, pa.reached, "A to judge the lock stale")
	go func() { defer close(doneB); lb, _, errB = b.TryAcquire("job") }()
	if serialised {
		waitClosed(t, watch.asked, "B to ask for the guard")
		time.Sleep(20 * time.Millisecond) // let B block on the flock (not required for correctness)
	} else {
		<-doneB // without the guard B runs to completion while A is paused
	}
	close(pa.resume)
	<-doneA
	<-doneB
	if errA != nil || errB != nil {
		t.Fatalf("errors: A %v, B %v", errA, errB)
	}
	n := 0
	for _, l := range []*Lock{la, lb} {
		if l != nil {
			n++
		}
	}
	return n
}

func TestRaceTwoReclaimersOneWinner(t *testing.T) {
	if n := raceTwoReclaimers(t, true); n != 1 {
		t.Fatalf("%d reclaimers hold the lock, want 1", n)
	}
}

// Negative control: without the guard and the post-move check, the same
// interleaving lets both reclaimers believe they hold the lock.
func TestRaceTwoReclaimersNegativeControl(t *testing.T) {
	if n := raceTwoReclaimers(t, false); n != 2 {
		t.Fatalf("unserialised: %d holders; the race this test guards against did not show", n)
	}
}

// raceHolderAgainstReclaim: the holder's lock has expired (it was
// stopped); it starts op (a renewal or a release) and pauses at point,
// after verifying it still owns the lock; a reclaimer tries meanwhile, and
// once it is known to be in flight the holder resumes. Returns op's error,
// the holder's lock and the reclaimer's (nil if it did not win).
func raceHolderAgainstReclaim(t *testing.T, serialised bool, point string, op func(*Lock) error) (error, *Lock, *Lock) {
	dir := t.TempDir()
	h := newTestLocker(t, dir, time.Minute)
	held := mustAcquire(t, h, "job")
	expire(t, held)
	rec := newTestLocker(t, dir, time.Minute)
	knobsOf(h).unserialised, knobsOf(rec).unserialised = !serialised, !serialised
	watch := &guardWatch{asked: make(chan struct{})}
	rec.FS = watch
	ph := pauseAt(h, point)

	opErr := make(chan error, 1)
	go func() { opErr <- op(held) }()
	waitClosed(t, ph.reached, "the holder to reach "+point)
	var won *Lock
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, _, err := rec.TryAcquire("job")
		if err != nil {
			t.Error(err)
		}
		won = l
	}()
	if serialised {
		waitClosed(t, watch.asked, "the reclaimer to ask for the guard")
		awaitQueuedFlock(t, rec.files("job").guard)
	} else {
		<-done // without the guard the reclaimer runs to completion meanwhile
	}
	close(ph.resume)
	err := <-opErr
	<-done
	return err, held, won
}

func raceRenewAgainstReclaim(t *testing.T, serialised bool) (error, *Lock, *Lock) {
	return raceHolderAgainstReclaim(t, serialised, "renew:verified", (*Lock).Renew)
}

func TestRaceRenewBeatsReclaim(t *testing.T) {
	err, held, won := raceRenewAgainstReclaim(t, true)
	if err != nil {
		t.Fatalf("renew: %v", err)
	}
	if won != nil {
		t.Fatal("the reclaimer took a lock its holder had just renewed")
	}
	if owners(t, held.Path, held) != 1 || len(staleFiles(t, held.Path)) != 0 {
		t.Fatal("the renewed lock was moved away")
	}
}

func TestRaceRenewAgainstReclaimNegativeControl(t *testing.T) {
	err, held, won := raceRenewAgainstReclaim(t, false)
	// Unserialised, the reclaimer moves the lock while the holder is
	// between its check and its write; the renewal then overwrites the new
	// holder's lock and both believe they hold it.
	if err != nil || won == nil {
		t.Fatalf("unserialised: renew %v, reclaimer won %v; the race did not show", err, won != nil)
	}
	if owners(t, held.Path, won) != 0 {
		t.Fatal("unserialised: the new holder's lock survived; the race did not show")
	}
}

// raceReleaseAgainstNewHolder: the old holder (expired) verifies and pauses
// before removing; a reclaimer tries meanwhile.
func raceReleaseAgainstNewHolder(t *testing.T, serialised bool) (*Lock, *Lock) {
	_, old, won := raceHolderAgainstReclaim(t, serialised, "release:verified", (*Lock).Release)
	return old, won
}

func TestRaceReleaseNeverRemovesNewHolder(t *testing.T) {
	old, won := raceReleaseAgainstNewHolder(t, true)
	if won == nil {
		t.Fatal("the reclaimer did not get the lock after the release")
	}
	if owners(t, old.Path, won) != 1 {
		t.Fatal("the new holder's lock is not on disk")
	}
}

func TestRaceReleaseAgainstNewHolderNegativeControl(t *testing.T) {
	old, won := raceReleaseAgainstNewHolder(t, false)
	if won == nil {
		t.Fatal("unserialised: the reclaimer did not win; the scenario did not run")
	}
	if _, err := os.Stat(old.Path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("unserialised: the new holder's lock survived the old release; the race did not show")
	}
}

// Many lockers, many rounds, some holders "crash" (abandon the lock until
// it expires): never two in the critical section, every round completes.
// The lockers take no tree file: they share this process, so only the TTL
// can free an abandoned lock (real crashed processes and their trees are
// the integration suite's stress rows).
func TestStressOneHolderAtATime(t *testing.T) {
	dir := t.TempDir()
	const workers, rounds = 8, 60
	var inside, maxInside, entries atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		r := newTestLocker(t, dir, 400*time.Millisecond)
		knobsOf(r).noTree = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				l, err := r.Acquire(context.Background(), "hot", 30*time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				entries.Add(1)
				inside.Add(-1)
				if rand.IntN(40) == 0 {
					continue // crash: leave the lock to expire
				}
				if err := l.Release(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if maxInside.Load() != 1 || entries.Load() != workers*rounds {
		t.Fatalf("max inside %d (want 1), entries %d (want %d)", maxInside.Load(), entries.Load(), workers*rounds)
	}
}
