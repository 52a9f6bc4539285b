package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/withlock/withlock/locks"
)

// treeKillWait bounds the wait for an orphaned tree to let go of its tree
// file after KILL: a process in uninterruptible sleep exits only when its
// system call returns.
const treeKillWait = 10 * time.Second

// treeEnded is `break --signal`'s outcome for an orphaned holder: its
// command's tree was ended and the lock moved aside.
type treeEnded struct {
	broken *locks.Broken
	how    string
}

func (e *treeEnded) Error() string { return "command ended, lock moved aside" }

// endTreeThenBreak ends the command tree of an orphaned holder (holder
// dead, command still running): TERM to every process that holds the tree
// file and to their process groups' members, up to grace for the tree file's
// flock to come free, then KILL to whatever is left, and then moves the
// lock aside — only the lock of that acquisition, which a new holder
// cannot have taken while the tree held it.
func endTreeThenBreak(locker *locks.RunLocker, live *locks.LiveHolderError, grace time.Duration) (*locks.Broken, error) {
	h := live.Holder
	how := "TERM"
	if !h.PidsKnown {
		return nil, fmt.Errorf("%v: its command's pids cannot be found in /proc, so it cannot be signalled from here", live)
	}
	signalTree(h.Pids, syscall.SIGTERM)
	if err := awaitTree(locker, &h, grace); err != nil {
		how = "TERM, then KILL after " + grace.String()
		h.FindPids()
		signalTree(h.Pids, syscall.SIGKILL)
		if err := awaitTree(locker, &h, treeKillWait); err != nil {
			return nil, fmt.Errorf("run %q: its command's tree (pids %s) still holds the lock %v after KILL", live.RunID, joinPids(h.Pids), treeKillWait)
		}
	}
	b, err := locker.BreakHolder(live.RunID, h.LockID)
	if errors.Is(err, locks.ErrNoLock) {
		return nil, errReleased
	}
	if err != nil {
		return nil, err
	}
	return nil, &treeEnded{broken: b, how: fmt.Sprintf("pids %s: %s", joinPids(live.Holder.Pids), how)}
}

func awaitTree(locker *locks.RunLocker, h *locks.Holder, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return locker.AwaitTreeEnd(ctx, h)
}

// signalTree sends sig to each pid that is still the process it was when
// found (its start time checked through a pidfd, see signalHolder).
func signalTree(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		start, err := locks.ProcessStartTime(pid)
		if err != nil {
			continue // gone already
		}
		signalHolder(pid, start, sig)
	}
}

func joinPids(pids []int) string {
	s := make([]string, len(pids))
	for i, pid := range pids {
		s[i] = strconv.Itoa(pid)
	}
	return strings.Join(s, " ")
}
