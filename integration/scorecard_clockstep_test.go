package integration

// Scorecard row "clock stepped forward past the TTL" (issue 16): a contender
// whose clock reads later than a live local holder's expires_at must not
// reclaim it. The wall clock cannot be stepped for one process (a time
// namespace offsets only the monotonic and boot clocks, and libfaketime does
// not reach a Go binary, which reads the clock through the vDSO itself), and
// stepping the machine's would disturb everything else on it. So the row
// does to the lock file what a step does to its reader: the live holder's
// own payload, lock_id and all, rewritten with expires_at an hour in the
// past — what every contender sees from the moment the clock jumps until
// the holder's next renewal. The holder runs with --ttl 1h so no renewal
// comes while the row looks.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// expireLockFile rewrites the lock file of runID in dir as a clock stepped
// forward past its expiry shows it: the same payload with expires_at (and
// created_at, so it stays before it) an hour and more in the past. The
// rewrite is a rename of a full copy, as every writer of the lock does, so
// no reader sees it torn.
func expireLockFile(t *testing.T, dir, runID string) {
	t.Helper()
	path := lockFile(dir, runID)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("lock file %s: %v", path, err)
	}
	now := float64(time.Now().UnixNano()) / 1e9
	doc["created_at"], doc["expires_at"] = now-7200, now-3600
	data, err = json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".clockstep"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if p, err := readLock(dir, runID); err != nil || !p.Expires().Before(time.Now()) {
		t.Fatalf("the rewritten lock: %+v, %v; want one expired", p, err)
	}
}

// TestScorecardClockStepLiveHolder: a live local holder whose lock reads as
// expired keeps it: a contender on the host and one in a pid namespace
// without its own /proc get 75, status says held, and the same holds once
// withlock itself is killed with -9 while its command runs on ("holder
// dead, command still running"). Once that command ends the lock is free.
// Negative control: the no-tree failpoint, whose lock is bound to its
// pid and TTL only as before the tree file, is reclaimed as expired beside
// its live holder, and the row's check sees the second holder.
func TestScorecardClockStepLiveHolder(t *testing.T) {
	// contend runs the contenders against an expired-looking live lock and
	// counts those whose command ran beside it.
	contend := func(t *testing.T, bin, dir string) (doubles int) {
		prefixes := map[string][]string{"the host": nil}
		if os.Geteuid() == 0 && exec.Command("unshare", "--pid", "--fork", "true").Run() == nil {
			prefixes["a pid namespace without its own /proc"] = []string{"unshare", "--pid", "--fork"}
		}
		return contendBeside(t, bin, dir, "step", prefixes)
	}
	t.Run("row", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "locks")
		work := t.TempDir()
		started := filepath.Join(work, "started")
		// The command leaves a setsid'd descendant that outlives a killed
		// withlock until told to stop, so the second half sees an orphaned
		// tree.
		stop := filepath.Join(work, "stop")
		script := `setsid sh -c 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done' "$0" "$1" & wait`
		holder := withlockCommand(t, "run", "--dir", dir, "--ttl", "1h", "step", "--", "sh", "-c", script, started, stop)
		startHolder(t, holder, started)
		t.Cleanup(func() {
			os.WriteFile(stop, nil, 0o600)
			_ = holder.Process.Kill()
		})

		expireLockFile(t, dir, "step")
		if n := contend(t, withlockBin, dir); n != 0 {
			t.Errorf("%d contenders ran beside a live holder whose lock reads as expired", n)
		}
		if stdout, stderr, code := runWithlock(t, "status", "--dir", dir, "step"); code != 0 || !strings.Contains(stdout, "held") {
			t.Errorf("status: exit %d, %q, %q; want held", code, stdout, stderr)
		}

		// withlock killed: its command runs on and still holds the lock.
		_ = holder.Process.Kill()
		waitExit(t, holder, defaultDeadline)
		expireLockFile(t, dir, "step")
		if n := contend(t, withlockBin, dir); n != 0 {
			t.Errorf("%d contenders ran beside an orphaned command whose lock reads as expired", n)
		}
		if stdout, _, _ := runWithlock(t, "status", "--dir", dir, "step"); !strings.Contains(stdout, "holder dead, command still running") {
			t.Errorf("status of the orphaned tree: %q; want \"holder dead, command still running\"", stdout)
		}
		// Its command ends: the lock is free.
		if err := os.WriteFile(stop, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		ran := filepath.Join(work, "ran-after")
		waitFor(t, 20*time.Second, func() bool {
			_, _, code := runWithlock(t, append([]string{"run", "--dir", dir, "step", "--"}, ranCmd(ran)...)...)
			return code == 0 && exists(ran)
		}, "the lock to be free once the command ended")
	})
	t.Run("negative control", func(t *testing.T) {
		bin := taggedBinary(t, tagNoTree)
		dir := filepath.Join(t.TempDir(), "locks")
		started := filepath.Join(t.TempDir(), "started")
		holder := exec.Command(bin, append([]string{"run", "--dir", dir, "--ttl", "1h", "step", "--"}, holderCmd(started)...)...)
		holder.Env = testEnv(t)
		startHolder(t, holder, started)
		defer stopHolder(t, holder)
		expireLockFile(t, dir, "step")
		if n := contend(t, bin, dir); n == 0 {
			t.Errorf("the build without tree files excluded every contender from an expired-looking live lock: the row cannot fail")
		}
	})
}
