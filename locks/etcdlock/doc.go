//go:build etcd

// Package etcdlock holds withlock's run lock in an etcd cluster (SPEC §6).
//
// The lock is the recipe of go.etcd.io/etcd/client/v3/concurrency, so
// `etcdctl lock <prefix><run_id>` and withlock exclude each other:
//
//   - a lease whose TTL is the lock's TTL, kept alive by the client (the
//     session of the recipe);
//   - a Mutex named <prefix><run_id>: each contender puts the key
//     <prefix><run_id>/<lease id in hex> under its lease, and the key with the
//     lowest create revision holds the lock.
//
// The first step (create the key, read the keys queued before it) is one
// transaction of withlock's own, the same as the Mutex's; with no wait a
// loser deletes its key (TryLock), with --wait it watches the queue for
// deletions until no key older than its own is left, as Mutex.Lock does
// (one wait loop, awaitTurn, serves exclusive and shared holders; an
// exclusive one waits there for the run id's --max slot holders too).
// Release revokes the lease, which deletes the key with it.
//
// What withlock adds to the recipe:
//
//   - Holder information. The contender's key is created with a JSON value
//     (run_id, lock_id, pid, host, command, created_at) in one transaction
//     before the Mutex sees it, so whoever finds the owner key can say who
//     holds the lock. A key with an empty value belongs to another client of
//     the recipe, such as etcdctl.
//   - A fencing token: the create revision of the owner key. Each new holder's
//     key is created after the previous owner's key existed, so the token
//     strictly increases across holders of a run id.
//   - Loss detection that does not wait for the next keepalive: a watch on the
//     owner key reports its deletion (lease revoked, lock broken) at once, and
//     a watchdog presumes the lease gone when keepalive answers stop for the
//     TTL minus a safety margin, before the server can hand the lock on.
//   - Bounded faults: an unreachable cluster is retried within the wait and
//     then reported as locks.ErrUnavailable naming the endpoints; release is
//     bounded in time and the lease's TTL frees the lock if it fails.
//
// Shared holders (run --shared) queue on the same mutex with "mode":
// "shared" in their value and hold once no exclusive key older than theirs
// is left (shared.go), so `etcdctl lock` is an exclusive contender to them
// too. Semaphores (run --max) are the mutexes of derived run ids
// (semaphore.go).
//
// Run ids are escaped ('%' → %25, '/' → %2F) in keys so that run "a" does not
// see run "a/b"'s keys under its prefix; other run ids are used as they are.
//
// The package is built only with the etcd build tag: the etcd client (gRPC)
// roughly doubles process start-up, and the default withlock binary must not
// pay for it (see cmd/withlock/backend_etcd.go).
package etcdlock
