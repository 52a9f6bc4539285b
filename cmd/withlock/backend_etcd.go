//go:build etcd

package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"
	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
)

// This file is withlock-etcd's: the run lock in an etcd cluster (SPEC §6,
// package locks/etcdlock). The default build execs this binary instead
// (backend_etcd_exec.go).

func init() {
	backends["etcd"] = newEtcdBackend
	// Set by the default build when it exec'd us; the child must not see it.
	os.Unsetenv(execMarkerEnv)
}

func newEtcdBackend(c *cli.Command, log zerolog.Logger, command string, onWait func(*locks.Holder, time.Duration)) (backend, error) {
	l, err := etcdLocker(c, log)
	if err != nil {
		return nil, err
	}
	if c.String("on-lock-lost") == "kill" {
		// The child must be gone before the lease can run out on the
		// server: the lock presumes a silent lease lost a grace earlier.
		l.Grace = c.Duration("grace")
	}
	l.Command = command
	l.OnWait = onWait
	return etcdBackend{l: l, slots: c.IsSet("max"), max: c.Int("max"), shared: c.Bool("shared")}, nil
}

// etcdBackend adapts etcdlock.Locker to the run command: a run lock, a
// slot of a semaphore (run --max), or the run id held shared (run
// --shared).
type etcdBackend struct {
	l      *etcdlock.Locker
	slots  bool
	max    int
	shared bool
}

func (b etcdBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	var lock *etcdlock.Lock
	var err error
	switch {
	case b.slots:
		lock, _, err = b.l.AcquireSlot(ctx, runID, b.max, wait)
	case b.shared:
		lock, err = b.l.AcquireShared(ctx, runID, wait)
	default:
		lock, err = b.l.Acquire(ctx, runID, wait)
	}
	if err != nil {
		return nil, err // not a heldLock holding a nil *Lock
	}
	lock.MarkStarted() // the run's history, should its withlock be killed
	return lock, nil
}

// etcdLocker reads the etcd flags and credentials.
func etcdLocker(c *cli.Command, log zerolog.Logger) (*etcdlock.Locker, error) {
	// Comma-separated; blanks around an endpoint and empty ones are dropped.
	endpoints := strings.FieldsFunc(c.String("endpoints"), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(endpoints) == 0 {
		return nil, usageError("--backend etcd needs --endpoints URL[,URL...] (or $WITHLOCK_ETCD_ENDPOINTS)")
	}
	if c.String("etcd-prefix") == "" {
		return nil, usageError("--etcd-prefix must not be empty")
	}
	ttl, err := locks.ResolveTTL(c.Duration("ttl"), os.Getenv)
	if err != nil {
		return nil, usageError("%v", err)
	}
	user, password := os.Getenv(etcdUsernameEnv), os.Getenv(etcdPasswordEnv)
	if (user == "") != (password == "") {
		return nil, usageError("etcd credentials need both $%s and $%s", etcdUsernameEnv, etcdPasswordEnv)
	}
	tlsCfg, err := etcdTLS(c.String("etcd-cacert"), c.String("etcd-cert"), c.String("etcd-key"))
	if err != nil {
		return nil, err
	}
	return &etcdlock.Locker{
		Endpoints:   endpoints,
		Prefix:      c.String("etcd-prefix"),
		TTL:         ttl,
		DialTimeout: c.Duration("etcd-dial-timeout"),
		TLS:         tlsCfg,
		Username:    user,
		Password:    password,
		Log:         log,
	}, nil
}

// etcdTLS builds the TLS configuration of the --etcd-* files, as etcdctl
// does (transport.TLSInfo); nil when none is given (https:// endpoints then
// use the system's CAs).
func etcdTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	if (certFile == "") != (keyFile == "") {
		return nil, usageError("--etcd-cert and --etcd-key go together")
	}
	cfg, err := transport.TLSInfo{TrustedCAFile: caFile, CertFile: certFile, KeyFile: keyFile}.ClientConfig()
	if err != nil {
		return nil, exitWith(exitCantCreate, fmt.Errorf("--etcd-cacert, --etcd-cert, --etcd-key: %w", err))
	}
	return cfg, nil
}

// etcdStatus is `withlock status --backend etcd [RUN_ID...]`: the run locks
// held in etcd (only those RUN_IDs, a free one shown as free), in the file
// backend's table or, with --json, its JSON document (statusReport), so the
// same scripts read both. 73 when etcd cannot be read.
func etcdStatus(c *cli.Command) error {
	st, queued, err := etcdReport(c, c.Args().Slice())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c, st, st.Errors)
	}
	writeStatusTable(c.Root().Writer, st)
	if len(queued) > 0 {
		fmt.Fprintf(c.Root().Writer, "\nwaiting: %s\n", strings.Join(queued, ", "))
	}
	return statusErrors(st.Errors)
}

// etcdReport is the status report of the run locks in etcd and their
// history (only runIDs', none: all), and the waiters queued on them ("RUN_ID
// N" each).
func etcdReport(c *cli.Command, runIDs []string) (*statusReport, []string, error) {
	l, err := etcdLocker(c, zerolog.Nop())
	if err != nil {
		return nil, nil, err
	}
	owners, err := l.Status(context.Background())
	if err != nil {
		return nil, nil, exitWith(exitCantCreate, fmt.Errorf("%s: %w", c.Name, err))
	}
	if len(runIDs) > 0 {
		owners = onlyRunIDs(owners, runIDs)
	}
	st := etcdStatusReport(l, owners, time.Now())
	etcdHistory(l, st, runIDs) // history_etcd.go
	var queued []string
	for _, o := range owners {
		if o.Waiters > 0 {
			queued = append(queued, fmt.Sprintf("%s %d", locks.OneLine(o.RunID), o.Waiters))
		}
	}
	return st, queued, nil
}

// onlyRunIDs keeps the owners of runIDs, in that order: every shared
// holder of one, and the holders of its semaphore's slots. A run id nobody
// holds gets an Owner without a key (free).
func onlyRunIDs(owners []*etcdlock.Owner, runIDs []string) []*etcdlock.Owner {
	byRun := map[string][]*etcdlock.Owner{}
	for _, o := range owners {
		id := baseRunID(o.RunID) // sem_status.go
		byRun[id] = append(byRun[id], o)
	}
	out := make([]*etcdlock.Owner, 0, len(runIDs))
	for _, id := range runIDs {
		held := byRun[id]
		if len(held) == 0 {
			held = []*etcdlock.Owner{{RunID: id, TTL: -1}}
		}
		out = append(out, held...)
	}
	return out
}

// etcdStatusReport is the file backend's status document for the run locks
// in etcd. "dir" names where they are: the endpoints and the key prefix.
// There are no leftovers (a lease frees its key; nothing is moved aside)
// and no scope registry (it is local: `withlock status` shows it).
func etcdStatusReport(l *etcdlock.Locker, owners []*etcdlock.Owner, now time.Time) *statusReport {
	var eps []string
	for _, ep := range l.Endpoints {
		eps = append(eps, strings.TrimRight(ep, "/"))
	}
	st := &statusReport{Dir: strings.Join(eps, ",") + l.Prefix, Now: locks.Epoch(now),
		Locks: []lockStatus{}, Leftovers: []leftoverStatus{}, Errors: []string{}}
	shared := map[string]int{} // shared holders listed so far, by run id
	for _, o := range owners {
		ls := etcdLockStatus(o, now)
		markSlot(&ls) // a semaphore slot: the user's run id and the slot (sem_status.go)
		if o.Shared {
			// A shared holder: its place among the run id's shared
			// holders, oldest first, stands for the file backend's slot.
			ls.Mode, ls.Slot = string(locks.ModeShared), shared[o.RunID]
			shared[o.RunID]++
		}
		st.Locks = append(st.Locks, ls)
	}
	st.Semaphores = semaphores(st.Locks, func(runID string) (int, bool) {
		// A --max semaphore's size is its own key: one read per one listed.
		max, found, err := l.MaxOf(context.Background(), runID)
		return max, err == nil && found
	}, nil)
	return st
}

// etcdLockStatus is one owner as a lockStatus. A held lock is "held": an
// etcd lock is never stale, its lease frees it when the holder stops
// renewing. The holder is "alive" while its lease has time left (it is
// being kept alive), "unknown" when that could not be read. key is the
// holder's etcd key, lock_id and fencing_token its lease (as the holder's
// WITHLOCK_LOCK_ID) and create revision; lock_file is "" (there is none).
// A key written by another client of the recipe (etcdctl lock) has no pid,
// host or command.
func etcdLockStatus(o *etcdlock.Owner, now time.Time) lockStatus {
	if o.Key == "" {
		return lockStatus{RunID: o.RunID, State: "free"}
	}
	ls := lockStatus{RunID: o.RunID, Key: o.Key, State: "held", Liveness: "unknown",
		LockID: fmt.Sprintf("%x", int64(o.Lease)), FencingToken: uint64(max(o.FencingToken, 0))}
	if o.TTL >= 0 {
		ls.Liveness = "alive"
		ls.ExpiresAt = locks.Epoch(now.Add(o.TTL))
		ls.ExpiresInSeconds = seconds(o.TTL)
	}
	if h := o.Holder; h != nil {
		ls.Pid, ls.Host, ls.Command = h.Pid, h.Host, h.Command
		ls.LockID = cmp.Or(h.LockID, ls.LockID)
		if h.CreatedAt > 0 {
			ls.CreatedAt, ls.AgeSeconds = h.CreatedAt, seconds(now.Sub(h.Created()))
		}
	}
	return ls
}

// etcdBreak is `withlock break --backend etcd RUN_ID`: it revokes the
// holders' leases, which deletes their keys. A withlock holder sees that at
// once, tears its command down and exits 76 (lock lost); the next waiter
// runs. RUN_ID's own lock is broken — its exclusive holder, or every shared
// one — and, for a semaphore (run --max), every slot's holder; with --slot
// K only slot K's. An etcd lock is never stale — its lease frees it when
// the holder dies — so there is nothing for the file backend's stale check
// to judge: every held lock belongs to a holder that keeps its lease alive,
// and breaking one is revoking it (--force and --signal are accepted and
// change nothing). Exit statuses and lines as the file backend's: 0 when
// the lock was broken or there was none, 64 for a --slot RUN_ID does not
// have, 73 when etcd could not be read or written.
func etcdBreak(c *cli.Command, runID string) error {
	l, err := etcdLocker(c, newLogger(c, os.Stderr))
	if err != nil {
		return err
	}
	out := newSayer(c)
	// Shared holders have no slots in etcd: break RUN_ID breaks them all.
	max, found, err := l.MaxOf(context.Background(), runID)
	if err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("break %q: %w", runID, err))
	}
	targets, err := slotTargets(c, runID, locks.ModeMax, max, max, found)
	if err != nil {
		return err
	}
	for _, id := range targets {
		broke, err := l.Break(context.Background(), id)
		for _, o := range broke {
			out.say("broke the lock of %s (lease %x revoked; was %s): %s", slotName(id), int64(o.Lease), o.Describe(time.Now()), o.Key)
		}
		if err != nil && !errors.Is(err, etcdlock.ErrNotHeld) {
			return exitWith(exitCantCreate, fmt.Errorf("break %s: %w", slotName(id), err))
		}
	}
	if !out.said {
		out.say("no lock for run %q", runID)
	}
	return nil
}
