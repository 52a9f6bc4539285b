// Package filelock is withlock's default backend: the run lock as one lock
// file per run id in a local directory (SPEC §3). The types and errors it
// shares with the etcd backend come from package locks.
//
// Where each part lives:
//   - RunLocker, one attempt (TryAcquire) and the wait (Acquire), the lock
//     file's creation, the fencing counter and the reclaim of a stale lock:
//     runlock.go; a held Lock (Renew, Release, Heartbeat): lock.go
//   - the wait loop that every wait runs, which never spins: wait.go, woken
//     by waker_linux.go (inotify on the directory, the holder's pidfd); the
//     hold, the queue of one host's waiters on the holder's flock: hold.go,
//     hold_linux.go
//   - the guard that serialises a run id's state transitions: guard_linux.go
//   - the stale judge: stale.go, with the holder's identity (identity.go);
//     the tree file that keeps a lock held while its command's process tree
//     runs: tree.go, tree_linux.go
//   - semaphores and shared locks (--max, --shared): semaphore.go,
//     semaphore_linux.go
//   - status (Inspect): inspect.go; break (Break, AwaitRelease): break.go;
//     gc (CollectGarbage): gc.go
//   - the lock directory, where it is and when it is safe to use: dir.go,
//     dirsafety.go; the descriptors a run needs: fdlimit_linux.go; lock ids:
//     random.go; the filesystem it goes through: fs.go
//   - what this package's tests change in a locker: seams.go
package filelock
