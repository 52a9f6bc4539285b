package filelock

import "strings"

// The tree file binds a run lock to its command's whole process tree, as
// flock(1)'s inherited descriptor does. At each acquisition the holder
// creates <key>.tree.<lock_id> (under the guard, before the lock file is
// linked, so no payload ever names a tree file that is not yet locked),
// takes flock(LOCK_EX) on it, and keeps the descriptor open without
// close-on-exec: the command and every process it starts inherit it — the
// group, setsid'd daemons, setuid children whose parent-death signal the
// kernel cleared. The payload says "tree": true. The flock is let go only
// when the last process holding that open file closes it or exits.
//
// So the stale judge can tell, on this host and boot, whether anything of
// a lock's tree still runs: a probe (open, flock(LOCK_SH|LOCK_NB), close)
// fails with EWOULDBLOCK while any process of it lives. A flock is a
// kernel object, seen across pid namespaces and without /proc. The probe
// takes a shared lock, so two probers never take each other's probe for a
// live tree, and it may run outside the guard.
//
// The file is per acquisition: release takes it away from the tree file's
// name, so orphans that --keep-orphans leaves running keep a file locked
// that no lock will name again, and never hold the next acquisition's lock.
// Kept orphans are outside the lock once withlock has released it. A
// reclaimer or break that moves a lock aside removes its tree file once the
// tree is gone; gc removes leftovers.
//
// Release does not unlink the file: it renames it to <key>.tree, the run
// id's spare, and the next acquisition renames the spare to its own tree
// file's name, after taking flock(LOCK_EX|LOCK_NB) on it. So a run id's
// acquisitions reuse one inode instead of making a new one each time: on
// ext4 a new inode costs more the more inodes were freed lately (the
// allocator skips recently deleted ones, reading inode tables to tell),
// far more than a rename with runs back to back. The flock decides whether the
// spare is free: a process that still holds it (a kept orphan) makes the
// flock fail, and the acquirer unlinks that spare and makes a new file.
// Only a spare of the acquirer's own user is taken.

// treeSuffix is the part of a tree file's name between the key and the
// lock id.
const treeSuffix = ".tree."

// treePath is where the tree file of the acquisition lockID of runID's key
// lives.
func treePath(lockPath, lockID string) string {
	return strings.TrimSuffix(lockPath, ".lock") + treeSuffix + lockID
}

// TreeState is what a probe of a lock's tree file found.
type TreeState int

const (
	TreeNone    TreeState = iota // the payload names no tree file (a foreign or older writer)
	TreeRunning                  // flock held: some process of the command's tree lives
	TreeEnded                    // flock free, or the file gone: every process of the tree has ended
	TreeUnknown                  // the file could not be probed (EACCES, another host's filesystem)
)

func (s TreeState) String() string {
	switch s {
	case TreeRunning:
		return "running"
	case TreeEnded:
		return "ended"
	case TreeUnknown:
		return "unknown"
	}
	return "none"
}
