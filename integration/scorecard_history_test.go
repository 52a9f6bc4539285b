package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks/history"
)

// Run history (SPEC §8), with real withlock processes.

// historyStorm starts a holder of one run id and, while it holds, n
// withlock runs of that id at once: a mix of exit codes, signal deaths,
// --timeout kills (all with --wait) and --wait 0 runs that mostly
// conflict. It returns what the exit statuses say the history must count,
// and what the history file holds.
func historyStorm(t *testing.T, bin string, n int) (want map[string]int, wantConflicts int, got history.Summary, skipped int) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	started := filepath.Join(t.TempDir(), "started")
	holder := startProc(bin, testEnv(t), "run", "--dir", dir, "storm", "--", "sh", "-c", `touch "$0"; sleep 1`, started)
	if !waitForFile(started, 10*time.Second, holder.ended) {
		t.Fatal("the holder did not start")
	}
	type job struct {
		args   []string
		result string // what a run that is not refused records
	}
	jobs := make([]job, n)
	for i := range jobs {
		base := []string{"run", "--dir", dir, "--wait", "120", "storm", "--"}
		switch i % 5 {
		case 0, 4:
			jobs[i] = job{append(base, "sh", "-c", fmt.Sprintf("exit %d", i%7)), history.ResultExit}
		case 1:
			jobs[i] = job{append(base, "sh", "-c", "kill -TERM $$"), history.ResultSignal}
		case 2:
			jobs[i] = job{[]string{"run", "--dir", dir, "--wait", "120", "--timeout", "0.05", "storm", "--", "sleep", "5"}, history.ResultTimeout}
		case 3:
			jobs[i] = job{[]string{"run", "--dir", dir, "-q", "--wait", "0", "storm", "--", "true"}, history.ResultExit}
		}
	}
	outcomes := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := execWithlock(bin, testEnv(t), 3*time.Minute, jobs[i].args...)
			if err != nil {
				t.Error(err)
			}
			outcomes[i] = out
		}()
	}
	wg.Wait()
	if out, err := holder.wait(time.Minute); err != nil || out.code != 0 {
		t.Fatalf("holder: %+v %v", out, err)
	}
	want = map[string]int{history.ResultExit: 1} // the holder's
	for i, out := range outcomes {
		switch {
		case out.code == 75:
			wantConflicts++
		case out.code == 73 && strings.Contains(out.stderr, "guard busy"):
			// 200 processes on a loaded machine: the guard's bound (SPEC
			// §3) can run out. Nothing started, nothing refused: no record.
			t.Logf("run %d: %s", i, strings.TrimSpace(out.stderr))
		case out.code == 124 && jobs[i].result == history.ResultTimeout, out.code == 143 && jobs[i].result == history.ResultSignal,
			out.code < 7 && jobs[i].result == history.ResultExit:
			want[jobs[i].result]++
		default:
			t.Errorf("run %d %v: status %d, stderr %q", i, jobs[i].args, out.code, out.stderr)
		}
	}
	recs, skipped, err := history.Read(history.File(dir, "storm"))
	if err != nil {
		t.Fatal(err)
	}
	return want, wantConflicts, history.Summarize(recs), skipped
}

// 200 concurrent runs of one id leave exactly their records and their
// conflicts, none torn, in a bounded file.
func TestScorecardHistoryConcurrentRuns(t *testing.T) {
	want, conflicts, got, skipped := historyStorm(t, taggedBinary(t, ""), scaled(200, 400))
	if skipped != 0 {
		t.Errorf("%d torn or foreign lines", skipped)
	}
	for result, n := range want {
		if got.RunsTotal[result] != n {
			t.Errorf("%s runs: history counts %d, exit statuses say %d", result, got.RunsTotal[result], n)
		}
	}
	if got.Conflicts != conflicts || conflicts == 0 {
		t.Errorf("conflicts: history counts %d, exit statuses say %d", got.Conflicts, conflicts)
	}
	if len(got.Runs) > history.KeepRuns+history.MaxLines {
		t.Errorf("%d runs kept", len(got.Runs))
	}
	t.Logf("runs %v, conflicts %d", got.RunsTotal, got.Conflicts)
}

// Negative control: with each line written in two write(2) calls,
// concurrent writers interleave, and the check above sees it.
func TestScorecardHistoryConcurrentRunsTornControl(t *testing.T) {
	want, conflicts, got, skipped := historyStorm(t, taggedBinary(t, failpoint.TornHistory), scaled(200, 400))
	lost := got.Conflicts != conflicts
	for result, n := range want {
		lost = lost || got.RunsTotal[result] != n
	}
	if skipped == 0 && !lost {
		t.Fatalf("torn-history: no torn line and nothing lost (runs %v, conflicts %d): the check cannot see interleaving", got.RunsTotal, got.Conflicts)
	}
	t.Logf("torn-history: %d torn lines, runs %v of %v, conflicts %d of %d", skipped, got.RunsTotal, want, got.Conflicts, conflicts)
}

// A withlock killed with SIGKILL leaves no record, but its stale lock:
// status says the run ended unobserved, and the next run, which reclaims
// the lock, records it (pid, token, start from the lock) with its own run.
func TestScorecardHistoryKilledHolderEndedUnobserved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	started := filepath.Join(t.TempDir(), "started")
	holder := startWithlock(t, "run", "--dir", dir, "job", "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
	if !waitForFile(started, 10*time.Second, func() bool { return exited(t, holder) }) {
		t.Fatal("the holder did not start")
	}
	holder.Process.Kill()
	waitExit(t, holder, 10*time.Second)
	var stdout string
	waitFor(t, 10*time.Second, func() bool { // until the child, sent its parent-death signal, is gone
		stdout, _, _ = runWithlock(t, "status", "--dir", dir, "job")
		return strings.Contains(stdout, "ended unobserved")
	}, "status to say ended unobserved")
	stdout, _, _ = runWithlock(t, "status", "--dir", dir)
	if !strings.Contains(stdout, "ended unobserved") {
		t.Errorf("status of all:\n%s", stdout)
	}
	if code, stderr := runOnce(t, 0, dir, "true"); code != 0 {
		t.Fatalf("the next run: %d %s", code, stderr)
	}
	recs, skipped, err := history.Read(history.File(dir, "job"))
	if err != nil || skipped != 0 || len(recs) != 2 {
		t.Fatalf("history after the next run: %+v, %d skipped, %v", recs, skipped, err)
	}
	if r := recs[0]; r.Result != history.ResultUnobserved || r.Pid != holder.Process.Pid || r.FencingToken == 0 || r.StartedAt == 0 {
		t.Errorf("the killed run's record: %+v", r)
	}
	if r := recs[1]; r.Result != history.ResultExit || *r.ExitCode != 0 || r.FencingToken <= recs[0].FencingToken {
		t.Errorf("the next run's record: %+v", r)
	}
	if stdout, _, _ = runWithlock(t, "status", "--dir", dir, "job"); !strings.Contains(stdout, "ended unobserved") || !strings.Contains(stdout, "exit 0") {
		t.Errorf("status after the next run:\n%s", stdout)
	}
	holder = startWithlock(t, "run", "--dir", dir, "job", "--", "sh", "-c", `rm "$0"; exec sleep 60`, started)
	waitFor(t, 10*time.Second, func() bool {
		_, err := os.Stat(started)
		return os.IsNotExist(err)
	}, "the second holder to start")
	holder.Process.Kill()
	waitExit(t, holder, 10*time.Second)
	waitFor(t, 10*time.Second, func() bool {
		stdout, _, _ = runWithlock(t, "status", "--dir", dir, "job")
		return strings.Contains(stdout, "stale")
	}, "the second holder's lock to be stale")

	// A second killed holder is broken instead: break records its run as
	// ended unobserved (no acquisition will reclaim the lock to do it); break
	// and gc keep the history; gc --history removes it once idle.
	runs := history.File(dir, "job")
	for _, args := range [][]string{{"break", "--dir", dir, "job"}, {"gc", "--dir", dir, "--older-than", "0"}} {
		if _, stderr, code := runWithlock(t, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, stderr)
		}
		if _, err := os.Stat(runs); err != nil {
			t.Fatalf("after %v: %v", args, err)
		}
	}
	recs, _, err = history.Read(runs)
	if err != nil || len(recs) != 3 || recs[2].Result != history.ResultUnobserved || recs[2].Pid != holder.Process.Pid || recs[2].FencingToken <= recs[1].FencingToken {
		t.Fatalf("history after break of the second killed holder (want its ended-unobserved record last): %+v, %v", recs, err)
	}
	if stdout, _, code := runWithlock(t, "gc", "--dir", dir, "--history", "--older-than", "0"); code != 0 || !strings.Contains(stdout, "(history)") {
		t.Fatalf("gc --history: %d %q", code, stdout)
	}
	if _, err := os.Stat(runs); !os.IsNotExist(err) {
		t.Fatalf("gc --history left %s: %v", runs, err)
	}
}

// runOnce runs `withlock run` of job in dir (as uid, unless 0) and returns
// its status and stderr.
func runOnce(t *testing.T, uid int, dir string, args ...string) (int, string) {
	t.Helper()
	argv := append([]string{"run", "--dir", dir, "job", "--"}, args...)
	var cmd *exec.Cmd
	if uid != 0 {
		cmd = asUser(t, uid, withlockBin, argv...)
	} else {
		cmd = withlockCommand(t, argv...)
	}
	_, stderr, code := runCommand(t, cmd, defaultDeadline)
	return code, stderr
}

// A history that cannot be written (a read-only file, a directory in its
// place) changes no exit status and costs one warning line.
func TestScorecardHistoryUnwritable(t *testing.T) {
	needRoot(t)
	for _, c := range []struct {
		name  string
		uid   int
		plant func(path string) error
	}{
		{"read-only file", nobody, func(path string) error {
			if err := os.WriteFile(path, nil, 0o400); err != nil {
				return err
			}
			return os.Chown(path, nobody, nobody)
		}},
		{"directory", 0, func(path string) error { return os.Mkdir(path, 0o700) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := openDir(t, 0o700)
			os.Chown(dir, c.uid, c.uid)
			if err := c.plant(history.File(dir, "job")); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				args []string
				code int
			}{{[]string{"sh", "-c", "exit 3"}, 3}, {[]string{"sh", "-c", "kill -TERM $$"}, 143}, {[]string{"true"}, 0}} {
				code, stderr := runOnce(t, c.uid, dir, tc.args...)
				if code != tc.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "history") {
					t.Errorf("%v: status %d (want %d), stderr %q (want one warning line)", tc.args, code, tc.code, stderr)
				}
			}
		})
	}
}

// A full file system (a small tmpfs) fails the history's start marker:
// still the command's status, one warning.
func TestScorecardHistoryFullDisk(t *testing.T) {
	needRoot(t)
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out) // not root of the mount namespace (a container)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "locks")
	if code, stderr := runOnce(t, 0, dir, "true"); code != 0 || stderr != "" {
		t.Fatalf("first run: %d %q", code, stderr)
	}
	// The history ends on a page boundary (a foreign line pads it), so its
	// next line needs a new page; the filler then takes every page but one,
	// which the lock file takes.
	path := history.File(dir, "job")
	data, _ := os.ReadFile(path)
	pad := 4096 - len(data)%4096
	data = append(data, []byte(strings.Repeat("x", pad-1)+"\n")...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(mnt, "filler")
	exec.Command("dd", "if=/dev/zero", "of="+filler, "bs=4096").Run() // until the disk is full
	if err := os.Truncate(filler, mustSize(t, filler)-4096); err != nil {
		t.Fatal(err)
	}
	// The run's record is written after its release, which frees the lock
	// file's page: the command keeps that page with a second link.
	code, stderr := runOnce(t, 0, dir, "sh", "-c", `ln "$WITHLOCK_LOCK_FILE" "$0"; exit 5`, filepath.Join(mnt, "keep"))
	if code != 5 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "history") {
		t.Errorf("status %d (want 5), stderr %q (want one warning line)", code, stderr)
	}
}

func mustSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// break --signal of a dead holder's surviving tree records that run as
// ended unobserved; a forced break of a live holder records nothing for it
// (negative control): that holder writes its own record, lock_lost.
func TestScorecardHistoryBreakRecordsDeadHoldersOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	started := filepath.Join(t.TempDir(), "started")
	holder := startWithlock(t, "run", "--dir", dir, "job", "--", "sh", "-c", `setsid sleep 60 & touch "$0"; exec sleep 60`, started)
	if !waitForFile(started, 10*time.Second, func() bool { return exited(t, holder) }) {
		t.Fatal("the holder did not start")
	}
	holder.Process.Kill()
	waitExit(t, holder, 10*time.Second)
	if stdout, stderr, code := runWithlock(t, "break", "--dir", dir, "--signal", "--grace", "1s", "job"); code != 0 || !strings.Contains(stdout, "ended the command") {
		t.Fatalf("break --signal of the dead holder's tree: %d %q %s", code, stdout, stderr)
	}
	recs, _, err := history.Read(history.File(dir, "job"))
	if err != nil || len(recs) != 1 || recs[0].Result != history.ResultUnobserved || recs[0].Pid != holder.Process.Pid {
		t.Fatalf("history after break --signal: %+v, %v", recs, err)
	}

	live := startWithlock(t, "run", "--dir", dir, "--ttl", "3", "job", "--", "sh", "-c", `rm "$0"; exec sleep 60`, started)
	waitFor(t, 10*time.Second, func() bool {
		_, err := os.Stat(started)
		return os.IsNotExist(err)
	}, "the live holder to start")
	if _, stderr, code := runWithlock(t, "break", "--dir", dir, "--force", "job"); code != 0 {
		t.Fatalf("break --force: %d %s", code, stderr)
	}
	if code := waitExit(t, live, 15*time.Second); code != 76 {
		t.Fatalf("the live holder after break --force exited %d, want 76 at its next renewal", code)
	}
	recs, _, err = history.Read(history.File(dir, "job"))
	if err != nil || len(recs) != 2 || recs[1].Result != history.ResultLockLost || recs[1].Pid != live.Process.Pid {
		t.Fatalf("history after the forced break (want the holder's own lock_lost last, no ended-unobserved for it): %+v, %v", recs, err)
	}
}

// TestScorecardHistorySharedDir: in a shared sticky dir a run id's history
// is its holder's user's. A start another user tries, refused by that
// user's lock, writes nothing: it used to create the history as its own, so
// that the holder's runs went unrecorded from then on and the holder's
// `status` failed with 73. And a user's `status` of a dir that holds
// another user's history, which it may not read, skips that history (it was
// 73 for the whole dir). Control: root reads both histories.
func TestScorecardHistorySharedDir(t *testing.T) {
	needRoot(t)
	dir := openDir(t, 0o777|os.ModeSticky)
	work := openDir(t, 0o777)
	// A run lock, and a semaphore all of whose slots are uid 65534's.
	for _, tc := range []struct {
		id   string
		args []string
	}{{"job", nil}, {"pool", []string{"--max", "1"}}} {
		started, release := filepath.Join(work, tc.id+".started"), filepath.Join(work, tc.id+".release")
		holder := asUser(t, nobody, withlockBin, append(append([]string{"run", "--dir", dir}, tc.args...), tc.id, "--",
			"sh", "-c", `touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`, started, release)...)
		startHolder(t, holder, started)
		if _, stderr, code := runWithlock(t, append(append([]string{"run", "--dir", dir}, tc.args...), tc.id, "--", "true")...); code != 75 {
			t.Fatalf("root beside uid 65534's %s: exit %d, want 75: %s", tc.id, code, stderr)
		}
		if _, err := os.Lstat(history.File(dir, tc.id)); !os.IsNotExist(err) {
			t.Errorf("root's refused start made uid 65534's history of %s (%v)", tc.id, err)
		}
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, holder, defaultDeadline); code != 0 {
			t.Fatalf("the holder of %s: exit %d", tc.id, code)
		}
		if fi, err := os.Lstat(history.File(dir, tc.id)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != nobody {
			t.Errorf("uid 65534's run of %s left no history of its own (%v)", tc.id, err)
		}
	}
	// Root's own run id: a history uid 65534 may not read.
	if _, stderr, code := runWithlock(t, "run", "--dir", dir, "rootjob", "--", "true"); code != 0 {
		t.Fatalf("root's run: exit %d: %s", code, stderr)
	}
	own := openDir(t, 0o700) // uid 65534's, for its scope registry
	if err := os.Chown(own, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"job"}, {"--scope-file", filepath.Join(own, "scope.lock")}} {
		stdout, stderr, code := runCommand(t, asUser(t, nobody, withlockBin, append([]string{"status", "--dir", dir}, args...)...), defaultDeadline)
		if code != 0 || stderr != "" || !strings.Contains(stdout, "exit 0") {
			t.Errorf("uid 65534's status %v: exit %d, stderr %q, stdout:\n%s", args, code, stderr, stdout)
		}
	}
	stdout, stderr, code := runWithlock(t, "status", "--json", "--dir", dir)
	if code != 0 || strings.Count(stdout, `"last_result": "exit"`) != 3 {
		t.Errorf("control, root's status: exit %d, stderr %q, want the three run ids' results:\n%s", code, stderr, stdout)
	}
}
