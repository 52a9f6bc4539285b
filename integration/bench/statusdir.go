//go:build linux

package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// statusSizes are the lock directories the status section reads: how many
// run locks each holds. The last is the status bar's.
var statusSizes = []int{100, 1000, 10000}

// statusRunID is the run id `status RUN_ID` asks about in every directory.
const statusRunID = "stale-00042"

// statusTool names a tool of the status section.
func statusTool(json bool, locks int) string {
	if json {
		return "status --json, " + commas(locks) + " locks"
	}
	return "status RUN_ID, " + commas(locks) + " locks"
}

// status: how `withlock status` grows with the locks in the directory.
// `status RUN_ID` names one lock and has no reason to read the others.
func init() {
	register(section{
		order: 80,
		name:  "status",
		title: "withlock status in a directory of N stale run locks (wall per run)",
		unit:  "ms",
		note: "each lock was left by a holder killed with -9 (one made for real, the rest copies of it under other run " +
			"ids, each with its .fence and .guard); `withlock run` is one run's wall in an empty directory, the bar's unit",
		runs:   func(b *bench) int { return b.statusRuns },
		warmup: true,
		prepare: func(b *bench) ([]*tool, func(), error) {
			if b.withlockMissing != "" {
				return []*tool{b.withlockTool("withlock run", nil)}, func() {}, nil
			}
			empty := b.dir("status-run")
			tools := []*tool{b.withlockTool("withlock run --dir E st -- true", b.wallOf(0, b.withlock, "run", "--dir", empty, "st", "--", "/bin/true"))}
			tools[0].name = "withlock run"
			var jsonTools []*tool
			for _, n := range statusSizes {
				dir, err := b.staleLockDir(n)
				if err != nil {
					return nil, func() {}, err
				}
				one := b.withlockTool("withlock status --dir D "+statusRunID, b.wallOf(0, b.withlock, "status", "--dir", dir, statusRunID))
				one.name, one.subject = statusTool(false, n), true
				all := b.withlockTool("withlock status --json --dir D", b.wallOf(0, b.withlock, "status", "--json", "--dir", dir))
				all.name, all.subject = statusTool(true, n), true
				tools = append(tools, one)
				jsonTools = append(jsonTools, all)
			}
			return append(tools, jsonTools...), func() {}, nil
		},
	})
}

// staleLockDir returns a fresh lock directory holding n stale run locks,
// stale-00000 …: withlock makes the first for real (its holder killed with
// -9), the others are copies of its files under other run ids and lock
// ids. It checks the copies with `withlock status --json`, which must list
// n locks, every one stale.
func (b *bench) staleLockDir(n int) (string, error) {
	dir := b.dir(fmt.Sprintf("status-%d", n))
	seed := "stale-00000"
	if _, err := b.runExpect(137, b.withlock, "run", "--dir", dir, seed, "--", "sh", "-c", "kill -9 $PPID; sleep 1"); err != nil {
		return "", fmt.Errorf("stale lock: %w", err)
	}
	// The holder is dead, but its command (sh, then sleep) still runs for a
	// moment and holds the tree file's flock: until it ends the lock is
	// "holder dead, command still running", held. Copy the files only once
	// withlock itself says the lock is stale.
	if err := b.waitStale(dir, seed, 30*time.Second); err != nil {
		return "", fmt.Errorf("stale lock: %w", err)
	}
	key := lockKey(seed)
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, key+".") {
			return "", fmt.Errorf("stale lock: %s: not named after sha256(%q) = %s: the lock file naming changed", name, seed, key)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		files[strings.TrimPrefix(name, key)] = data
	}
	payload, ok := files[".lock"]
	if !ok {
		return "", fmt.Errorf("stale lock: %s has no %s.lock after its holder was killed", dir, key)
	}
	var p struct {
		RunID  string `json:"run_id"`
		LockID string `json:"lock_id"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.RunID != seed || p.LockID == "" {
		return "", fmt.Errorf("stale lock: payload %q: run_id %q, lock_id %q (%v)", payload, p.RunID, p.LockID, err)
	}
	for i := 1; i < n; i++ {
		runID := fmt.Sprintf("stale-%05d", i)
		id := make([]byte, len(p.LockID)/2)
		_, _ = rand.Read(id)
		newID := hex.EncodeToString(id)
		copied := bytes.Replace(payload, []byte(`"run_id":"`+seed+`"`), []byte(`"run_id":"`+runID+`"`), 1)
		copied = bytes.Replace(copied, []byte(`"lock_id":"`+p.LockID+`"`), []byte(`"lock_id":"`+newID+`"`), 1)
		if bytes.Equal(copied, payload) {
			return "", fmt.Errorf("stale lock: payload %q: run_id or lock_id not found as written", payload)
		}
		for suffix, data := range files {
			if suffix == ".lock" {
				data = copied
			}
			// The tree file is named after the lock id: <key>.tree.<lock_id>.
			if suffix == ".tree."+p.LockID {
				suffix = ".tree." + newID
			}
			if err := os.WriteFile(filepath.Join(dir, lockKey(runID)+suffix), data, 0o600); err != nil {
				return "", err
			}
		}
	}
	return dir, b.checkStaleLocks(dir, n)
}

// waitStale polls `withlock status --json --dir dir runID` until it says
// the lock is stale, or fails once timeout has passed.
func (b *bench) waitStale(dir, runID string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cmd := exec.Command(b.withlock, "status", "--json", "--dir", dir, runID)
		cmd.Env = b.env
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("withlock status --json --dir %s %s: %w", dir, runID, err)
		}
		var st struct {
			Locks []struct {
				State       string `json:"state"`
				StaleReason string `json:"stale_reason"`
			} `json:"locks"`
		}
		if err := json.Unmarshal(out, &st); err != nil {
			return fmt.Errorf("withlock status --json --dir %s %s: %w", dir, runID, err)
		}
		if len(st.Locks) == 1 && st.Locks[0].State == "stale" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("withlock status --json --dir %s %s: not stale after %v: %s", dir, runID, timeout, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkStaleLocks runs `withlock status --json` on dir: n locks, all stale.
func (b *bench) checkStaleLocks(dir string, n int) error {
	cmd := exec.Command(b.withlock, "status", "--json", "--dir", dir)
	cmd.Env = b.env
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("withlock status --json --dir %s: %w", dir, err)
	}
	var st struct {
		Locks []struct {
			RunID string `json:"run_id"`
			State string `json:"state"`
		} `json:"locks"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return fmt.Errorf("withlock status --json --dir %s: %w", dir, err)
	}
	stale := 0
	for _, l := range st.Locks {
		if l.State == "stale" {
			stale++
		}
	}
	if len(st.Locks) != n || stale != n {
		return fmt.Errorf("withlock status --json --dir %s: %d locks, %d stale; want %d stale", dir, len(st.Locks), stale, n)
	}
	return nil
}

// lockKey is the file name stem of RUN_ID's lock: hex(sha256(RUN_ID)).
func lockKey(runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:])
}
