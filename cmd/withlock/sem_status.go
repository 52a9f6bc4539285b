package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
)

// semStatus is one semaphore or shared lock in `status --json`
// ("semaphores"): how RUN_ID is used, how many hold a slot, and how many
// wait for one (waiters_known false when that cannot be counted here).
type semStatus struct {
	RunID        string `json:"run_id"`
	Mode         string `json:"mode"` // max | shared
	Max          int    `json:"max"`  // 0 for shared
	Holders      int    `json:"holders"`
	Waiters      int    `json:"waiters"`
	WaitersKnown bool   `json:"waiters_known"`
}

// withSlotIDs adds to the named run ids the slots of those used as a
// semaphore or shared lock, so that `status RUN_ID` shows its holders.
func withSlotIDs(locker *filelock.RunLocker, runIDs []string) []string {
	out := slices.Clone(runIDs)
	for _, id := range runIDs {
		mode, _, slots, found, err := locker.SlotsOf(id)
		if err != nil || !found {
			continue
		}
		for k := 0; k < slots; k++ {
			out = append(out, locks.SlotRunID(id, mode, k))
		}
	}
	return out
}

// markSlot turns a slot's derived run id into the user's run id plus the
// slot it is; an exclusive lock gets mode "exclusive" and slot -1.
func markSlot(ls *lockStatus) {
	ls.Mode, ls.Slot = "exclusive", -1
	if base, mode, k, ok := locks.ParseSlotRunID(ls.RunID); ok {
		ls.RunID, ls.Mode, ls.Slot = base, string(mode), k
	}
}

// semaphores sums up, per run id with slots among ls, its mode and its
// holders; sizeOf gives a --max semaphore's size, waitersOf how many wait
// (nil: not known here). Each slot in ls learns its semaphore's size.
func semaphores(ls []lockStatus, sizeOf func(runID string) (int, bool), waitersOf func(runID string) (int, bool)) []semStatus {
	out := []semStatus{}
	index := map[string]int{}
	for i := range ls {
		l := &ls[i]
		if l.Slot < 0 {
			continue
		}
		k, seen := index[l.RunID]
		if !seen {
			s := semStatus{RunID: l.RunID, Mode: l.Mode}
			if l.Mode == string(locks.ModeMax) {
				if max, ok := sizeOf(l.RunID); ok {
					s.Max = max
				}
			}
			if waitersOf != nil {
				s.Waiters, s.WaitersKnown = waitersOf(l.RunID)
			}
			k = len(out)
			index[l.RunID] = k
			out = append(out, s)
		}
		l.Max = out[k].Max
		if l.State == "held" || l.State == "torn" {
			out[k].Holders++
		}
	}
	return out
}

// slotLabel is how the table names a lock: the run id, and its slot.
func slotLabel(l lockStatus) string {
	switch {
	case l.Slot < 0:
		return l.RunID
	case l.Mode == "max" && l.Max > 0:
		return fmt.Sprintf("%s [slot %d of %d]", l.RunID, l.Slot, l.Max)
	case l.Mode == "max":
		return fmt.Sprintf("%s [slot %d]", l.RunID, l.Slot)
	}
	return fmt.Sprintf("%s [shared %d]", l.RunID, l.Slot)
}

func writeSemaphoreTable(w io.Writer, sems []semStatus) {
	if len(sems) == 0 {
		return
	}
	fmt.Fprintf(w, "\nsemaphores and shared locks (%d):\n", len(sems))
	t := newTable(w, "  RUN ID", "MODE", "HOLDERS", "WAITERS")
	for _, s := range sems {
		mode := "shared"
		if s.Mode == "max" {
			mode = "max " + strconv.Itoa(s.Max)
		}
		waiters := "?"
		if s.WaitersKnown {
			waiters = strconv.Itoa(s.Waiters)
		}
		t.row("  "+s.RunID, mode, strconv.Itoa(s.Holders), waiters)
	}
	t.Flush()
}

// slotName is how messages name a run id that may be a slot's:
// `run "b" slot 2`, or `run "b"`.
func slotName(id string) string {
	if base, mode, k, ok := locks.ParseSlotRunID(id); ok {
		if mode == locks.ModeShared {
			return fmt.Sprintf("run %q shared slot %d", base, k)
		}
		return fmt.Sprintf("run %q slot %d", base, k)
	}
	return fmt.Sprintf("run %q", id)
}

// slotText rewrites a message about a slot's derived run id to name the
// user's run id and the slot.
func slotText(msg, id string) string {
	if _, _, _, ok := locks.ParseSlotRunID(id); !ok {
		return msg
	}
	return strings.ReplaceAll(msg, "run "+strconv.Quote(id), slotName(id))
}

// slotTargets is what `break RUN_ID` moves: RUN_ID's own lock and, for a
// semaphore or shared lock (found: mode, max, slots), every slot; with
// --slot K only that slot.
func slotTargets(c *cli.Command, runID string, mode locks.SemMode, max, slots int, found bool) ([]string, error) {
	if !c.IsSet("slot") {
		targets := []string{runID}
		for k := 0; found && k < slots; k++ {
			targets = append(targets, locks.SlotRunID(runID, mode, k))
		}
		return targets, nil
	}
	k := c.Int("slot")
	switch {
	case !found:
		return nil, usageError("break --slot %d: run %q has no slots (run --max makes them, and --shared on the file backend)", k, runID)
	case k < 0 || k >= slots:
		how := "--shared"
		if mode == locks.ModeMax {
			how = "--max " + strconv.Itoa(max)
		}
		return nil, usageError("break --slot %d: run %q has slots 0…%d (%s)", k, runID, slots-1, how)
	}
	return []string{locks.SlotRunID(runID, mode, k)}, nil
}

// baseRunID is the run id the user named, for a slot's derived id too.
func baseRunID(id string) string {
	base, _, _, _ := locks.ParseSlotRunID(id)
	return base
}
