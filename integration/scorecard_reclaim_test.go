package integration

// Scorecard row "stale-reclaim race": eight withlock processes find the same
// stale (expired) lock at once; exactly one may reclaim and hold it.

import (
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// holdUntilTerm is a child that holds the lock until TERM and then exits 0,
// so the winner of a round keeps the lock while the losers try.
const holdUntilTerm = `trap 'exit 0' TERM; sleep 60 & wait`

func TestScorecardStaleReclaimRace(t *testing.T) {
	const reclaimers = 8
	rounds := scaled(20, 200)
	dir := filepath.Join(t.TempDir(), "locks")
	env := testEnv(t)
	for round := 0; round < rounds; round++ {
		runID := fmt.Sprintf("stale-%d", round)
		plantLock(t, dir, runID, expiredPayload(runID))
		results := raceReclaimers(t, env, dir, runID, reclaimers)
		winners, losers := 0, 0
		for i, r := range results {
			switch {
			case r.err != nil:
				t.Errorf("round %d reclaimer %d: %v", round, i, r.err)
			case r.code == 0:
				winners++
			case r.code == 75:
				losers++
			default:
				t.Errorf("round %d reclaimer %d: exit %d, want 0 (winner) or 75\nstderr: %s", round, i, r.code, r.stderr)
			}
			assertNoPanic(t, fmt.Sprintf("round %d reclaimer %d", round, i), r.stderr)
		}
		if winners != 1 || losers != reclaimers-1 {
			t.Errorf("round %d: %d winners and %d losers among %d reclaimers of one stale lock, want exactly 1 winner", round, winners, losers, reclaimers)
		}
		if n := len(staleFiles(t, dir, runID)); n != 1 {
			t.Errorf("round %d: %d .stale.* files, want 1 (the one stale lock, moved aside once)", round, n)
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("stale-reclaim race: %d rounds × %d reclaimers, exactly one winner each", rounds, reclaimers)
}

type reclaimResult struct {
	outcome
	err error
}

// raceReclaimers starts n `withlock run` of runID at once, none waiting.
// Losers exit at once with 75; when all but one have ended, the remaining
// one must be the holder, and it is asked (TERM) to let go.
func raceReclaimers(t *testing.T, env []string, dir, runID string, n int) []reclaimResult {
	t.Helper()
	results := make([]reclaimResult, n)
	var wg sync.WaitGroup
	cmds, bin := make([]*execProc, n), binary(t)
	for i := range cmds {
		cmds[i] = startProc(bin, env, "run", "--dir", dir, runID, "--", "sh", "-c", holdUntilTerm)
	}
	for i, p := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := p.wait(30 * time.Second)
			results[i] = reclaimResult{o, err}
		}()
	}
	// Once n-1 have ended, TERM the survivor (the holder, if all went well).
	waitFor(t, 30*time.Second, func() bool { return countEnded(cmds) >= n-1 }, "all reclaimers but one to end")
	for _, p := range cmds {
		if !p.ended() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	wg.Wait()
	return results
}

func countEnded(ps []*execProc) int {
	n := 0
	for _, p := range ps {
		if p.ended() {
			n++
		}
	}
	return n
}
