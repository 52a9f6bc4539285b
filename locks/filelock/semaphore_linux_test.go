package filelock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

func TestSlotRunIDRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		base string
		mode locks.SemMode
		k    int
	}{{"b", locks.ModeMax, 0}, {"build x", locks.ModeMax, 17}, {"db", locks.ModeShared, 3}, {"", locks.ModeShared, 0}} {
		base, mode, k, ok := locks.ParseSlotRunID(locks.SlotRunID(tc.base, tc.mode, tc.k))
		if !ok || base != tc.base || mode != tc.mode || k != tc.k {
			t.Errorf("ParseSlotRunID(SlotRunID(%q, %s, %d)) = %q, %s, %d, %v", tc.base, tc.mode, tc.k, base, mode, k, ok)
		}
	}
	for _, id := range []string{"plain", "a\x00max x", "a\x00other 1", "a\x00max -1", "a\x00max"} {
		if _, _, _, ok := locks.ParseSlotRunID(id); ok {
			t.Errorf("ParseSlotRunID(%q) ok, want not a slot id", id)
		}
	}
}

func mustSlot(t *testing.T, r *RunLocker, runID string, max int) *SlotLock {
	t.Helper()
	l, err := r.AcquireSlot(context.Background(), runID, max, 0)
	if err != nil {
		t.Fatalf("AcquireSlot(%q, %d): %v", runID, max, err)
	}
	return l
}

func envOf(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Three holders of a --max 3 semaphore get the three slots, each its own
// lock file and a fencing token that grows per slot; a fourth is refused
// naming all three; the child's env names the user's run id.
func TestSemaphoreSlots(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	var held []*SlotLock
	slots := map[int]bool{}
	for i := 0; i < 3; i++ {
		l := mustSlot(t, r, "b", 3)
		held = append(held, l)
		slots[l.Slot] = true
		env := envOf(l.Env())
		if env["WITHLOCK_RUN_ID"] != "b" || env["WITHLOCK_SLOT"] != strconv.Itoa(l.Slot) || env["WITHLOCK_MAX"] != "3" {
			t.Errorf("env %v", env)
		}
		if env["WITHLOCK_LOCK_FILE"] != r.LockPath(locks.SlotRunID("b", locks.ModeMax, l.Slot)) {
			t.Errorf("lock file %q", env["WITHLOCK_LOCK_FILE"])
		}
	}
	if len(slots) != 3 || !slots[0] || !slots[1] || !slots[2] {
		t.Fatalf("slots %v, want 0, 1, 2", slots)
	}
	_, err := r.AcquireSlot(context.Background(), "b", 3, 0)
	var full *locks.SlotsHeldError
	if !errors.As(err, &full) || !errors.Is(err, locks.ErrHeld) || len(full.Holders) != 3 {
		t.Fatalf("fourth holder: %v, want all 3 slots held", err)
	}
	self := strconv.Itoa(os.Getpid())
	if want := fmt.Sprintf("run \"b\": all 3 slots are held (pids %s, %s, %s)", self, self, self); err.Error() != want {
		t.Errorf("line %q, want %q", err.Error(), want)
	}
	tok := held[1].FencingToken()
	slot := held[1].Slot
	if err := held[1].Release(); err != nil {
		t.Fatal(err)
	}
	again := mustSlot(t, r, "b", 3)
	if again.Slot != slot || again.FencingToken() <= tok {
		t.Errorf("re-acquired slot %d token %d, want slot %d token > %d", again.Slot, again.FencingToken(), slot, tok)
	}
	held[1] = again
	for _, l := range held {
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// A plain lock of the same run id is the exclusive mode: it gets in
	// now that the slots are free.
	x := mustAcquire(t, r, "b")
	if err := r.AwaitNoSharers(context.Background(), x, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	x.Release()
}

// Holders that disagree about N (or about the mode) get one error naming
// both; once the others are gone, the new N takes over.
func TestSemaphoreMismatch(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	l := mustSlot(t, r, "b", 3)
	_, err := r.AcquireSlot(context.Background(), "b", 5, time.Minute)
	if !errors.Is(err, locks.ErrModeMismatch) {
		t.Fatalf("--max 5 against --max 3: %v", err)
	}
	want := fmt.Sprintf("run \"b\": --max 5 disagrees with --max 3 of its running holders (pid %d)", os.Getpid())
	if err.Error() != want {
		t.Errorf("line %q, want %q", err.Error(), want)
	}
	_, err = r.AcquireSlot(context.Background(), "b", 0, 0)
	if !errors.Is(err, locks.ErrModeMismatch) || !strings.Contains(err.Error(), "--shared disagrees with --max 3") {
		t.Errorf("--shared against --max 3: %v", err)
	}
	l.Release()
	five := mustSlot(t, r, "b", 5)
	defer five.Release()
	if mode, max, _, found, err := r.SlotsOf("b"); err != nil || !found || mode != locks.ModeMax || max != 5 {
		t.Errorf("SlotsOf = %s %d %v %v", mode, max, found, err)
	}
}

// One release of a full semaphore wakes one waiter, at once (no poll:
// the polls are 5 s and more), and that waiter takes the freed slot; the
// other waiters keep waiting and are counted by WaitersOf.
func TestSemaphoreReleaseWakesOneWaiter(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	knobsOf(r).holdPoll = time.Hour
	a, b := mustSlot(t, r, "b", 2), mustSlot(t, r, "b", 2)
	type got struct {
		l   *SlotLock
		err error
		at  time.Time
	}
	results := make(chan got, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 3; i++ {
		w := newTestLocker(t, r.Dir, time.Minute) // one locker per waiter, as one per process
		knobsOf(w).holdPoll = time.Hour
		go func() {
			l, err := w.AcquireSlot(ctx, "b", 2, -1)
			results <- got{l, err, time.Now()}
		}()
	}
	waitUntil(t, func() bool { n, ok := r.WaitersOf("b"); return ok && n == 3 }, "three waiters counted")
	released := time.Now()
	slot := a.Slot
	a.Release()
	first := <-results
	if first.err != nil || first.l.Slot != slot {
		t.Fatalf("first waiter: %+v, want slot %d", first, slot)
	}
	if took := first.at.Sub(released); took > 2*time.Second {
		t.Errorf("woken %v after the release", took)
	}
	waitUntil(t, func() bool { n, ok := r.WaitersOf("b"); return ok && n == 2 }, "two waiters left")
	select {
	case g := <-results:
		t.Fatalf("a second waiter got a slot with none free: %+v", g)
	default:
	}
	b.Release()
	second := <-results
	if second.err != nil {
		t.Fatal(second.err)
	}
	first.l.Release()
	third := <-results
	if third.err != nil {
		t.Fatal(third.err)
	}
	second.l.Release()
	third.l.Release()
	if n, _ := r.WaitersOf("b"); n != 0 {
		t.Errorf("%d waiters counted after all returned", n)
	}
}

// TestHelperSlotHolder is a holder process: it takes a slot of "b" (max
// LOCKS_SEM_MAX, 0 for shared) in LOCKS_SEM_DIR, starts a setsid'd
// `sleep 300` that inherits the tree file as a command does, prints the
// slot and the sleep's pid, and waits to be killed.
func TestHelperSlotHolder(t *testing.T) {
	dir := os.Getenv("LOCKS_SEM_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	max, _ := strconv.Atoi(os.Getenv("LOCKS_SEM_MAX"))
	r, err := NewRunLocker(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l, err := r.AcquireSlot(context.Background(), "b", max, 0)
	if err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "300")
	sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(l.Slot, sleep.Process.Pid)
	time.Sleep(time.Hour)
}

// slotHolder starts a holder process and returns it with its slot and its
// command's pid.
func slotHolder(t *testing.T, dir string, max int) (holder *exec.Cmd, slot, child int) {
	t.Helper()
	holder = exec.Command(os.Args[0], "-test.run=^TestHelperSlotHolder$", "-test.count=1")
	holder.Env = append(os.Environ(), "LOCKS_SEM_DIR="+dir, "LOCKS_SEM_MAX="+strconv.Itoa(max))
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fscan(bufio.NewReader(out), &slot, &child); err != nil {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("holder printed no slot: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(child, syscall.SIGKILL)
		holder.Process.Kill()
		holder.Wait()
	})
	return holder, slot, child
}

// A slot holder SIGKILLed while its command's tree runs keeps its slot
// (the tree rule); when the tree ends, the waiter first in line is woken
// by the tree file's flock and takes that slot at once.
func TestSemaphoreDeadHolderTreeKeepsSlot(t *testing.T) {
	dir := t.TempDir()
	holder, slot, child := slotHolder(t, dir, 1)
	holder.Process.Kill()
	holder.Wait()
	r := newTestLocker(t, dir, time.Minute)
	knobsOf(r).holdPoll = time.Hour
	_, err := r.AcquireSlot(context.Background(), "b", 1, 0)
	var full *locks.SlotsHeldError
	if !errors.As(err, &full) || !full.Holders[0].Orphaned {
		t.Fatalf("slot of a dead holder whose tree runs: %v, want held, orphaned", err)
	}
	if want := fmt.Sprintf("'s command (holder dead, command still running: pids %d))", child); !strings.HasSuffix(err.Error(), want) {
		t.Errorf("conflict line %q, want it to end %q", err.Error(), want)
	}
	got := make(chan error, 1)
	var l *SlotLock
	w := newTestLocker(t, dir, time.Minute)
	knobsOf(w).holdPoll = time.Hour
	go func() {
		var err error
		l, err = w.AcquireSlot(context.Background(), "b", 1, time.Minute)
		got <- err
	}()
	tree := full.Holders[0].TreeFile
	waitUntil(t, func() bool { return hasOpen(os.Getpid(), tree) }, "the waiter to wait on the tree file")
	killed := time.Now()
	syscall.Kill(child, syscall.SIGKILL)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if took := time.Since(killed); took > 2*time.Second {
		t.Errorf("slot reclaimed %v after the tree ended", took)
	}
	if l.Slot != slot {
		t.Errorf("got slot %d, want the dead holder's %d", l.Slot, slot)
	}
}

// A holder SIGKILLed together with its command frees its slot for the
// next acquirer at once (no TTL wait).
func TestSemaphoreDeadHolderReclaimed(t *testing.T) {
	dir := t.TempDir()
	holder, slot, child := slotHolder(t, dir, 2)
	r := newTestLocker(t, dir, time.Minute)
	other := mustSlot(t, r, "b", 2)
	defer other.Release()
	syscall.Kill(child, syscall.SIGKILL)
	holder.Process.Kill()
	holder.Wait()
	killed := time.Now()
	l, err := r.AcquireSlot(context.Background(), "b", 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if took := time.Since(killed); took > 2*time.Second {
		t.Errorf("slot reclaimed %v after its holder died", took)
	}
	if l.Slot != slot {
		t.Errorf("got slot %d, want %d", l.Slot, slot)
	}
}

// Shared holders hold together; an exclusive acquirer takes the run id's
// own lock and waits for them; new shared holders wait behind it (no
// starvation); when the old ones leave the exclusive one runs alone, and
// the waiting shared ones get in after it.
func TestSharedAndExclusive(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	knobsOf(r).holdPoll = time.Hour
	s1, s2 := mustSlot(t, r, "db", 0), mustSlot(t, r, "db", 0)
	if s1.Slot == s2.Slot {
		t.Fatalf("two shared holders in slot %d", s1.Slot)
	}
	if env := envOf(s1.Env()); env["WITHLOCK_SHARED"] != "1" || env["WITHLOCK_RUN_ID"] != "db" {
		t.Errorf("shared env %v", env)
	}
	var mu sync.Mutex
	var order []string
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	xDone := make(chan *Lock, 1)
	xr := newTestLocker(t, r.Dir, time.Minute)
	go func() {
		start := time.Now()
		x, err := xr.Acquire(context.Background(), "db", time.Minute)
		if err == nil {
			err = xr.AwaitNoSharers(context.Background(), x, start, time.Minute)
		}
		if err != nil {
			t.Error(err)
			xDone <- nil
			return
		}
		note("exclusive")
		xDone <- x
	}()
	waitUntil(t, func() bool { _, err := os.Stat(r.LockPath("db")); return err == nil }, "the exclusive acquirer's intent")
	// A new shared holder does not get in while the exclusive one waits.
	if _, err := r.AcquireSlot(context.Background(), "db", 0, 0); !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("shared holder admitted past a waiting exclusive one: %v", err)
	}
	sDone := make(chan *SlotLock, 1)
	sr := newTestLocker(t, r.Dir, time.Minute)
	go func() {
		l, err := sr.AcquireSlot(context.Background(), "db", 0, time.Minute)
		if err != nil {
			t.Error(err)
			sDone <- nil
			return
		}
		note("shared")
		sDone <- l
	}()
	waitUntil(t, func() bool { n, _ := r.WaitersOf("db"); return n == 1 }, "the new shared holder to wait")
	s1.Release()
	select {
	case <-xDone:
		t.Fatal("exclusive holder got in with a shared holder left")
	default:
	}
	released := time.Now()
	s2.Release()
	x := <-xDone
	if x == nil {
		t.FailNow()
	}
	if took := time.Since(released); took > 2*time.Second {
		t.Errorf("exclusive woken %v after the last shared release", took)
	}
	select {
	case <-sDone:
		t.Fatal("shared holder got in with the exclusive one holding")
	default:
	}
	x.Release()
	s3 := <-sDone
	if s3 == nil {
		t.FailNow()
	}
	s3.Release()
	if !slices.Equal(order, []string{"exclusive", "shared"}) {
		t.Errorf("order %v", order)
	}
}

// An exclusive acquirer whose wait runs out with shared holders left gets
// a conflict naming one of them.
func TestExclusiveWaitRunsOut(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	s := mustSlot(t, r, "db", 0)
	defer s.Release()
	x := exclusiveRunsOut(t, r, "db")
	x.Release()
}

// exclusiveRunsOut takes runID's own lock and checks that the wait for
// its sharers runs out, held by one of this process's slots.
func exclusiveRunsOut(t *testing.T, r *RunLocker, runID string) *Lock {
	t.Helper()
	start := time.Now()
	x, err := r.Acquire(context.Background(), runID, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = r.AwaitNoSharers(context.Background(), x, start, 200*time.Millisecond)
	var held *locks.HeldError
	if !errors.As(err, &held) || held.Holder.Pid != os.Getpid() {
		x.Release()
		t.Fatalf("AwaitNoSharers = %v, want held by a shared holder of this process", err)
	}
	return x
}

// corruptMeta writes garbage over runID's meta file and checks that it
// really reads as corrupt (the control: without the recovery, every
// caller below would get this error).
func corruptMeta(t *testing.T, r *RunLocker, runID string) {
	t.Helper()
	if err := os.WriteFile(r.files(runID).sem, []byte("{garbage\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.readMeta(runID); err == nil || !strings.Contains(err.Error(), "is corrupt") {
		t.Fatalf("readMeta of the garbage = %v, want corrupt", err)
	}
}

// A garbage .sem with no slot held is rewritten by the next slot taker,
// instead of failing every run of the id until someone removes it.
func TestCorruptMetaHealedWhenNoSlotHeld(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	l := mustSlot(t, r, "b", 2)
	l.Release()
	corruptMeta(t, r, "b")
	l = mustSlot(t, r, "b", 3)
	defer l.Release()
	if mode, max, slots, found, err := r.SlotsOf("b"); err != nil || !found || mode != locks.ModeMax || max != 3 || slots != 3 {
		t.Errorf("SlotsOf after the heal = %s max %d slots %d %v %v, want max 3 slots 3", mode, max, slots, found, err)
	}
}

// With slots still held, the meta is rebuilt from their lock files: a
// newcomer does not take a held slot, and one whose N is too small for
// the slots held is refused as a mismatch.
func TestCorruptMetaRebuiltFromHeldSlots(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	a, b := mustSlot(t, r, "b", 2), mustSlot(t, r, "b", 2)
	a.Release() // slot 0 free, slot 1 held
	defer b.Release()
	corruptMeta(t, r, "b")
	if _, err := r.AcquireSlot(context.Background(), "b", 1, 0); !errors.Is(err, locks.ErrModeMismatch) {
		t.Errorf("--max 1 with slot 1 held: %v, want a mismatch", err)
	}
	c := mustSlot(t, r, "b", 2)
	defer c.Release()
	if c.Slot != 0 {
		t.Errorf("newcomer got slot %d, want the free slot 0 (slot 1 is held)", c.Slot)
	}
	if _, err := r.AcquireSlot(context.Background(), "b", 2, 0); !errors.Is(err, locks.ErrHeld) {
		t.Errorf("third holder of --max 2: %v, want both slots held", err)
	}
}

// What status and break read (SlotsOf) sees through a corrupt meta too:
// the slots still held, not "never used with slots" (which made `status
// RUN_ID` call a held semaphore free). Reading does not write the file.
func TestCorruptMetaSlotsOfFindsHeldSlots(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	a, b := mustSlot(t, r, "b", 3), mustSlot(t, r, "b", 3)
	a.Release() // slot 0 free, slot 1 held
	defer b.Release()
	corruptMeta(t, r, "b")
	before, err := os.ReadFile(r.files("b").sem)
	if err != nil {
		t.Fatal(err)
	}
	mode, max, slots, found, err := r.SlotsOf("b")
	if err != nil || !found || mode != locks.ModeMax || slots != 2 || max != 2 {
		t.Errorf("SlotsOf with slot 1 held = %s max %d slots %d %v %v, want max 2 slots 2 (the least N that fits)", mode, max, slots, found, err)
	}
	if after, _ := os.ReadFile(r.files("b").sem); string(after) != string(before) {
		t.Errorf("SlotsOf rewrote the meta file: %q", after)
	}
	b.Release()
	if _, _, _, found, err := r.SlotsOf("b"); err != nil || found {
		t.Errorf("SlotsOf with no slot held and a corrupt meta = %v %v, want not found", found, err)
	}
}

// Shared holders above slot 0 are found again, so an exclusive run still
// waits for every one of them after the meta was corrupted.
func TestCorruptMetaExclusiveStillWaitsForSharers(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	s0, s1, s2 := mustSlot(t, r, "db", 0), mustSlot(t, r, "db", 0), mustSlot(t, r, "db", 0)
	s0.Release()
	s1.Release()
	defer s2.Release()
	if s2.Slot != 2 {
		t.Fatalf("third sharer in slot %d, want 2", s2.Slot)
	}
	corruptMeta(t, r, "db")
	x := exclusiveRunsOut(t, r, "db") // the sharer in slot 2 is found again
	// A sharer that comes now (after the exclusive one let go) heals the
	// meta with the high-water mark kept.
	x.Release()
	s := mustSlot(t, r, "db", 0)
	defer s.Release()
	if _, _, slots, found, err := r.SlotsOf("db"); err != nil || !found || slots < 3 {
		t.Errorf("SlotsOf after the heal: slots %d %v %v, want at least 3", slots, found, err)
	}
}

// The grace for a just-died holder (wait.go) reaches slots too, as it does
// run locks: a one-attempt AcquireSlot that finds the slot's holder dead
// with its command still ending waits up to orphanGrace for the tree to
// end, and takes the slot instead of calling it a conflict.
func TestSemaphoreJustDiedHolderGraced(t *testing.T) {
	dir := t.TempDir()
	holder, slot, child := slotHolder(t, dir, 1)
	holder.Process.Kill()
	holder.Wait()
	r := newTestLocker(t, dir, time.Minute)
	lockPath := r.LockPath(locks.SlotRunID("b", locks.ModeMax, slot))
	tree := treePath(lockPath, readPayload(t, lockPath).LockID)
	go func() {
		// Killed only once the acquirer waits on the tree file: in its
		// grace, after its attempt found the holder orphaned.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if hasOpen(os.Getpid(), tree) {
				break
			}
		}
		syscall.Kill(child, syscall.SIGKILL)
	}()
	l, err := r.AcquireSlot(context.Background(), "b", 1, 0)
	if err != nil {
		t.Fatalf("AcquireSlot(wait 0) with the holder's tree ending in the grace: %v", err)
	}
	defer l.Release()
	if l.Slot != slot {
		t.Errorf("got slot %d, want the dead holder's %d", l.Slot, slot)
	}
}
