package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/withlock/withlock/locks"
)

// treeKillWait bounds the wait for an orphaned tree to let go of its tree
// file after KILL: a process in uninterruptible sleep exits only when its
// system call returns.
const treeKillWait = 10 * time.Second

// endTreeThenBreak ends the command tree of an orphaned holder (holder
// dead, command still running): TERM to every process that holds the tree
// file and to their process groups' members, up to grace for the tree file's
// flock to come free, then KILL to whatever is left, and then moves the
// lock aside — only the lock of that acquisition, which a new holder
// cannot have taken while the tree held it. It reports how the tree was
// ended.
func endTreeThenBreak(locker *locks.RunLocker, live *locks.LiveHolderError, grace time.Duration) (*locks.Broken, string, error) {
	h := live.Holder
	how := "TERM"
	if !h.PidsKnown {
		return nil, "", fmt.Errorf("%v: its command's pids cannot be found in /proc, so it cannot be signalled from here", live)
	}
	signalTree(h.Pids, syscall.SIGTERM)
	if err := awaitTree(locker, &h, grace); err != nil {
		how = "TERM, then KILL after " + grace.String()
		h.FindPids()
		signalTree(h.Pids, syscall.SIGKILL)
		if err := awaitTree(locker, &h, treeKillWait); err != nil {
			return nil, "", fmt.Errorf("run %q: its command's tree (pids %s) still holds the lock %v after KILL", live.RunID, joinPids(h.Pids), treeKillWait)
		}
	}
	b, err := locker.BreakHolder(live.RunID, h.LockID)
	if errors.Is(err, locks.ErrNoLock) {
		return nil, "", errReleased
	}
	return b, fmt.Sprintf("pids %s: %s", joinPids(live.Holder.Pids), how), err
}

func awaitTree(locker *locks.RunLocker, h *locks.Holder, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return locker.AwaitTreeEnd(ctx, h)
}

// signalTree sends sig to each pid that is still there; the pids are
// those the holder's tree had when last found (Holder.FindPids).
func signalTree(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		signalHolder(pid, 0, sig)
	}
}

// joinPids is "123 124 125".
func joinPids(pids []int) string { return strings.Trim(fmt.Sprint(pids), "[]") }
