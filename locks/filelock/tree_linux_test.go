package filelock

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks"
)

// TestHelperTreeHolder is a holder process for the tree tests: it takes
// the lock of "job" in LOCKS_TREE_DIR, starts `sleep 300` (which inherits
// the tree file, as a command's tree does), prints the sleep's pid and
// waits to be killed.
func TestHelperTreeHolder(t *testing.T) {
	dir := os.Getenv("LOCKS_TREE_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	r, err := NewRunLocker(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l, h, err := r.TryAcquire("job")
	if err != nil || l == nil {
		t.Fatalf("acquire: %v %+v", err, h)
	}
	sleep := exec.Command("sleep", "300")
	sleep.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outside our group, like a daemon
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Println(sleep.Process.Pid)
	time.Sleep(time.Hour) // until killed
}

// orphanedLock runs a holder process, SIGKILLs it once its command (a
// setsid'd sleep) runs, and returns the sleep's pid.
func orphanedLock(t *testing.T, dir string) int {
	t.Helper()
	holder := exec.Command(os.Args[0], "-test.run=^TestHelperTreeHolder$", "-test.count=1")
	holder.Env = append(os.Environ(), "LOCKS_TREE_DIR="+dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(bufio.NewReader(out), &pid); err != nil {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("holder printed no pid: %v", err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	holder.Process.Kill()
	holder.Wait()
	return pid
}

// A holder killed while its command runs leaves the lock held by that
// command: orphaned, naming its pid; once the command ends, a waiter is
// woken by the tree file's flock (not a poll) and takes the lock; the old
// tree file is removed.
func TestTreeOutlivesHolder(t *testing.T) {
	dir := t.TempDir()
	survivor := orphanedLock(t, dir)
	r := newTestLocker(t, dir, time.Minute)
	l, h, err := r.TryAcquire("job")
	if err != nil || l != nil {
		t.Fatalf("TryAcquire = %v, %v: want held by the survivor", l, err)
	}
	if !h.Orphaned || h.TreeFile == "" {
		t.Fatalf("holder %+v: want orphaned with a tree file", h)
	}
	FindPids(h)
	if !h.PidsKnown || !slices.Equal(h.Pids, []int{survivor}) {
		t.Fatalf("pids %v (known %v), want [%d]", h.Pids, h.PidsKnown, survivor)
	}
	held := &locks.HeldError{RunID: "job", Holder: *h, At: time.Now()}
	want := fmt.Sprintf("run \"job\" is held by pid %d's command (holder dead, command still running: pids %d)", h.Pid, survivor)
	if held.Error() != want {
		t.Fatalf("conflict line %q, want %q", held.Error(), want)
	}
	// Expired or not, the tree holds it: push the clock past the TTL.
	r.now = func() time.Time { return time.Now().Add(time.Hour) }
	if l, _, _ := r.TryAcquire("job"); l != nil {
		t.Fatal("an orphaned lock was reclaimed by its TTL while its tree runs")
	}
	r.now = time.Now

	knobsOf(r).holdPoll = time.Hour // only the tree's flock can wake the waiter in time
	got := make(chan error, 1)
	var lock *Lock
	go func() {
		var err error
		lock, err = r.Acquire(context.Background(), "job", time.Minute)
		got <- err
	}()
	tree := h.TreeFile
	waitUntil(t, func() bool { return hasOpen(os.Getpid(), tree) }, "the waiter to block on the tree file")
	killed := time.Now()
	syscall.Kill(survivor, syscall.SIGKILL)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if took := time.Since(killed); took > 3*time.Second {
		t.Errorf("woken %v after the tree ended; the directory poll is 5 s ± 25 %%", took)
	}
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Errorf("the ended tree's file is still there: %v", err)
	}
}

// Kept orphans (--keep-orphans) are outside the lock once it is released:
// a process that inherited this acquisition's tree file does not hold the
// next acquisition.
func TestReleasedTreeHoldsNothing(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	l := mustAcquire(t, r, "job")
	if l.TreeFile() == nil {
		t.Fatal("no tree file")
	}
	orphan := exec.Command("sleep", "300") // inherits the tree file: not close-on-exec
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { orphan.Process.Kill(); orphan.Wait() }()
	tree := treePath(l.Path, l.LockID())
	waitUntil(t, func() bool { return hasOpen(orphan.Process.Pid, tree) }, "the orphan to hold the tree file")
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tree); !os.IsNotExist(err) {
		t.Fatalf("release left the tree file: %v", err)
	}
	next := mustAcquire(t, newTestLocker(t, dir, time.Minute), "job")
	defer next.Release()
	if probeTree(treePath(next.Path, next.LockID())) != TreeRunning {
		t.Fatal("the new holder's tree file is not locked")
	}
	// The orphan still holds the old file's flock — released to the spare's
	// name, then unlinked by the next acquirer, which found it held: proof
	// that it did inherit it (the negative side of this row).
	if !hasOpen(orphan.Process.Pid, l.files.spare+" (deleted)") {
		t.Fatal("the orphan no longer holds the old tree file; the row shows nothing")
	}
}

// Back-to-back acquisitions of a run id use one tree inode: release leaves
// it as the spare, the next acquirer renames it to its own tree file's
// name and locks it. A spare with the wrong mode, or not a regular file,
// is not taken.
func TestTreeSpareReused(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	first := mustAcquire(t, r, "job")
	firstIno := inodeOf(t, treePath(first.Path, first.LockID()))
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	spare := first.files.spare
	// Older than gc's floor for tree files (MinTempAge), so a spare taken
	// for a leftover would be removed here.
	old := time.Now().Add(-2 * MinTempAge)
	if err := os.Chtimes(spare, old, old); err != nil {
		t.Fatal(err)
	}
	if removed, err := r.CollectGarbage(0, false); err != nil || len(removed) != 0 {
		t.Fatalf("gc removed %+v (%v); the spare is not a leftover", removed, err)
	}
	if got := inodeOf(t, spare); got != firstIno {
		t.Fatalf("spare inode %d, want the released tree file's %d", got, firstIno)
	}
	second := mustAcquire(t, r, "job")
	tree := treePath(second.Path, second.LockID())
	if got := inodeOf(t, tree); got != firstIno {
		t.Errorf("second tree file inode %d, want the spare's %d", got, firstIno)
	}
	if _, err := os.Stat(spare); !os.IsNotExist(err) {
		t.Errorf("the spare is still there after it was taken: %v", err)
	}
	if probeTree(tree) != TreeRunning {
		t.Error("the reused tree file is not locked")
	}
	if got := second.TreeFile().Name(); got != tree {
		t.Errorf("reused tree file named %q, want %q", got, tree)
	}
	if second.TreeFile().Fd() < inheritFrom {
		t.Errorf("reused tree descriptor %d, want ≥ %d", second.TreeFile().Fd(), inheritFrom)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}

	// Control: a spare whose mode is not the dir's lock mode is left alone.
	if err := os.Chmod(spare, 0o640); err != nil {
		t.Fatal(err)
	}
	third := mustAcquire(t, r, "job")
	if inodeOf(t, treePath(third.Path, third.LockID())) == firstIno {
		t.Error("a spare of mode 0640 was taken")
	}
	// A directory planted as the spare is not taken either.
	if err := third.Release(); err != nil {
		t.Fatal(err)
	}
	os.Remove(spare)
	if err := os.Mkdir(spare, 0o700); err != nil {
		t.Fatal(err)
	}
	fourth := mustAcquire(t, r, "job")
	if fourth.TreeFile() == nil || probeTree(treePath(fourth.Path, fourth.LockID())) != TreeRunning {
		t.Error("with a directory as the spare, no locked tree file was made")
	}
	if err := fourth.Release(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(spare); err != nil || !fi.IsDir() {
		t.Errorf("the planted directory: %v, %v", fi, err)
	}
	if _, err := os.Stat(treePath(fourth.Path, fourth.LockID())); !os.IsNotExist(err) {
		t.Errorf("with the spare's name taken, release left the tree file: %v", err)
	}
}

// probeTree tells a running tree from an ended one and from no file.
func TestProbeTree(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k.tree.x")
	if got := probeTree(path); got != TreeEnded {
		t.Errorf("no file: %v, want ended", got)
	}
	f, err := createTree(osFS{}, path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if f.Fd() < inheritFrom {
		t.Errorf("tree descriptor %d, want ≥ %d", f.Fd(), inheritFrom)
	}
	if got := probeTree(path); got != TreeRunning {
		t.Errorf("locked: %v, want running", got)
	}
	if got := probeTree(path); got != TreeRunning {
		t.Errorf("a second probe: %v, want running (a probe must not take the lock)", got)
	}
	f.Close()
	if got := probeTree(path); got != TreeEnded {
		t.Errorf("closed: %v, want ended", got)
	}
}

func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	testwait.For(t, 10*time.Second, what, cond)
}

// hasOpen reports whether process pid has path open.
func hasOpen(pid int, path string) bool {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(fds)
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// treeFaultFS fails the tree file's operations on demand.
type treeFaultFS struct {
	osFS
	openTree error                      // OpenTree fails with it, creating or not
	rename   func(oldpath string) error // a non-nil result fails Rename
}

func (f *treeFaultFS) OpenTree(path string, create bool, perm fs.FileMode) (*os.File, error) {
	if f.openTree != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: f.openTree}
	}
	return f.osFS.OpenTree(path, create, perm)
}

func (f *treeFaultFS) Rename(oldpath, newpath string) error {
	if f.rename != nil {
		if err := f.rename(oldpath); err != nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
		}
	}
	return f.osFS.Rename(oldpath, newpath)
}

// The tree file goes through the fsys layer like every lock file. When it
// cannot be opened, the lock is taken without one (judged by pid and TTL
// alone, and its payload says so) and nothing is left behind; when the
// spare cannot be renamed into place, the acquisition makes a fresh tree
// file and the spare stays.
func TestTreeFaults(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	ffs := &treeFaultFS{openTree: syscall.EMFILE}
	r.FS = ffs
	treeFiles := func() []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "*.tree*"))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	l := mustAcquire(t, r, "job")
	if l.TreeFile() != nil || readPayload(t, l.Path).Tree {
		t.Fatal("a lock whose tree file could not be opened claims one")
	}
	if m := treeFiles(); len(m) != 0 {
		t.Fatalf("tree files left: %v", m)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}

	// Control: with the open working, the same locker makes a tree file.
	ffs.openTree = nil
	l = mustAcquire(t, r, "job")
	if l.TreeFile() == nil || !readPayload(t, l.Path).Tree {
		t.Fatal("no tree file with the open working")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	spare := l.files.spare
	spareIno := inodeOf(t, spare)

	ffs.rename = func(oldpath string) error {
		if oldpath == spare {
			return syscall.EIO
		}
		return nil
	}
	l = mustAcquire(t, r, "job")
	defer l.Release()
	tree := treePath(l.Path, l.LockID())
	if inodeOf(t, tree) == spareIno {
		t.Fatal("the spare was taken although its rename failed")
	}
	if probeTree(tree) != TreeRunning {
		t.Fatal("the fresh tree file is not locked")
	}
	if fi, err := os.Stat(spare); err != nil || inode(fi) != spareIno {
		t.Fatalf("the spare after a failed rename: %v, %v", fi, err)
	}
}
