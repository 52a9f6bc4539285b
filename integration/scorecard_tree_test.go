package integration

// Scorecard rows for SPEC §3 "the lock lives as long as the run's process
// tree" (issue 15): a withlock killed with SIGKILL while its command's tree
// lives on — a grandchild in the group, a setsid'd descendant, a setuid
// grandchild whose parent-death signal the kernel cleared — leaves the
// lock held. The next run gets 75 naming the survivor, status shows
// "holder dead, command still running" with it, break refuses without
// --signal, and break --signal ends the tree and frees the lock. Each row
// has a negative control: the no-tree failpoint, whose lock is bound
// to withlock's pid and TTL only, lets the next run in beside the survivor.

import (
	"encoding/json"
	"fmt"
	"github.com/withlock/withlock/internal/failpoint"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	tagNoTree = failpoint.NoTree // acquisitions take no tree file

	orphanedText = "holder dead, command still running"
)

// treeSurvivor is a way for a command to leave a process behind when
// withlock dies: script is a shell fragment that starts one long-lived
// process in the background, which writes its own pid to "$PIDFILE".
type treeSurvivor struct {
	name   string
	script string
}

// The survivor writes its pid itself ($$ of its own sh), then becomes the
// sleep (exec keeps the pid and the inherited descriptors).
var treeSurvivors = []treeSurvivor{
	{"grandchild in the group", `sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' &`},
	{"setsid'd descendant", `setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' &`},
	{"setuid grandchild", `setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo $$ > "$PIDFILE"; exec sleep 300' &`},
}

// orphanTree runs `withlock run job -- sh -c '<survivor>; wait'` with bin,
// waits for the survivor's pid, SIGKILLs withlock, and returns the
// survivor's pid. The survivor is killed when the test ends.
func orphanTree(t *testing.T, bin, dir string, s treeSurvivor) int {
	t.Helper()
	// Not under t.TempDir(), whose parent is 0700: the setuid survivor
	// (uid 65534) writes its pid here.
	pidDir, err := os.MkdirTemp("", "withlock-tree-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pidDir) })
	if err := os.Chmod(pidDir, 0o777); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(pidDir, "survivor.pid")
	cmd := newCmd(bin, append(testEnv(t), "PIDFILE="+pidFile), []string{"run", "--dir", dir, "job", "--", "sh", "-c", s.script + " wait"})
	holder := startCmd(cmd)
	t.Cleanup(func() { stopProc(holder) })
	if !waitForFile(pidFile, defaultDeadline, holder.ended) {
		o, err := holder.wait(time.Second)
		t.Fatalf("%s: the survivor never wrote its pid (%v): %s", s.name, err, o.stderr)
	}
	var pid int
	pollUntil(defaultDeadline, func() bool {
		data, _ := os.ReadFile(pidFile)
		_, err := fmt.Sscan(string(data), &pid)
		return err == nil && pid > 0
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.wait(defaultDeadline); err != nil {
		t.Fatal(err)
	}
	if !alive(pid) {
		t.Fatalf("%s: the survivor %d died with withlock; the scenario did not run", s.name, pid)
	}
	return pid
}

// TestScorecardTreeHoldsLock: for each survivor, the lock stays held by the
// tree after withlock's SIGKILL, and break --signal frees it.
func TestScorecardTreeHoldsLock(t *testing.T) {
	bin := binary(t)
	for _, s := range treeSurvivors {
		t.Run(s.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			survivor := orphanTree(t, bin, dir, s)
			pidText := fmt.Sprint(survivor)

			// The next run: a conflict naming the survivor.
			_, stderr, code := runWithlock(t, "run", "--dir", dir, "job", "--", "true")
			if code != 75 || !strings.Contains(stderr, orphanedText) || !strings.Contains(stderr, pidText) {
				t.Fatalf("next run exited %d, want 75 naming %q and pid %s:\n%s", code, orphanedText, pidText, stderr)
			}
			if lines := strings.Count(strings.TrimSpace(stderr), "\n"); lines != 0 {
				t.Errorf("the conflict is %d lines, want one:\n%s", lines+1, stderr)
			}
			// Only the survivor: not the caller (which opens the tree file
			// to probe it) nor the caller's process group.
			if _, named, _ := strings.Cut(strings.TrimSpace(stderr), "pids "); strings.TrimSuffix(named, ")") != pidText {
				t.Errorf("the conflict names pids %q, want exactly the survivor %s:\n%s", named, pidText, stderr)
			}
			// The survivor got the tree descriptor once, above the numbers
			// scripts use, and no other file of the lock dir.
			if in := descriptorsUnder(survivor, dir); len(in) != 1 || in[0].fd < 100 || !strings.Contains(in[0].target, ".tree.") {
				t.Errorf("the survivor's descriptors of the lock dir: %v, want one tree file at 100 or above", in)
			}

			// status, table and JSON.
			out, _, code := runWithlock(t, "status", "--dir", dir)
			if code != 0 || !strings.Contains(out, orphanedText) || !strings.Contains(out, pidText) {
				t.Errorf("status exited %d, want the state and pid %s:\n%s", code, pidText, out)
			}
			out, _, code = runWithlock(t, "status", "--json", "--dir", dir, "job")
			var doc struct {
				Locks []struct {
					State, Holder, Tree string
					Pids                []int
				}
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || len(doc.Locks) != 1 {
				t.Fatalf("status --json exited %d (%v):\n%s", code, err, out)
			}
			if l := doc.Locks[0]; l.State != "held" || l.Holder != orphanedText || l.Tree != "running" || !slices.Contains(l.Pids, survivor) {
				t.Errorf("status --json: %+v, want held, %q, tree running, pids with %d", l, orphanedText, survivor)
			}

			// break refuses and names --signal; break --signal ends the tree.
			_, stderr, code = runWithlock(t, "break", "--dir", dir, "job")
			if code != 75 || !strings.Contains(stderr, "--signal") {
				t.Errorf("break exited %d, want 75 naming --signal:\n%s", code, stderr)
			}
			if !alive(survivor) {
				t.Fatal("break without --signal ended the survivor")
			}
			out, stderr, code = runWithlock(t, "break", "--signal", "--grace", "5s", "--dir", dir, "job")
			if code != 0 {
				t.Fatalf("break --signal exited %d:\n%s%s", code, out, stderr)
			}
			if !pollUntil(defaultDeadline, func() bool { return !alive(survivor) }) {
				t.Fatalf("the survivor %d outlived break --signal", survivor)
			}
			assertFreeNow(t, dir, "job", "break --signal")
			if trees, _ := filepath.Glob(filepath.Join(dir, "*.tree.*")); len(trees) != 0 {
				t.Errorf("tree files left behind: %v", trees)
			}
		})
	}
}

// TestScorecardTreeHoldsLockNegativeControl: without the tree file the next
// run takes the lock while the survivor still runs — two jobs at once.
func TestScorecardTreeHoldsLockNegativeControl(t *testing.T) {
	bin := taggedBinary(t, tagNoTree)
	for _, s := range treeSurvivors {
		t.Run(s.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			survivor := orphanTree(t, bin, dir, s)
			o, err := execWithlock(bin, testEnv(t), defaultDeadline, "run", "--dir", dir, "job", "--", "true")
			if err != nil {
				t.Fatal(err)
			}
			if o.code != 0 || !alive(survivor) {
				t.Fatalf("negative control: next run exited %d (survivor alive: %v), want 0 beside the survivor: the row could not fail\n%s",
					o.code, alive(survivor), o.stderr)
			}
		})
	}
}

// TestScorecardTreeWaiterWakesWhenTreeEnds: a waiter for a lock whose tree
// runs on is woken by the tree's last process exiting — it blocks on the
// tree file's flock, no poll — and then takes the lock.
func TestScorecardTreeWaiterWakesWhenTreeEnds(t *testing.T) {
	bin := binary(t)
	dir := filepath.Join(t.TempDir(), "locks")
	survivor := orphanTree(t, bin, dir, treeSurvivors[0])
	waiter := startProc(bin, testEnv(t), "run", "--wait", "60s", "--dir", dir, "job", "--", "true")
	t.Cleanup(func() { stopProc(waiter) })
	// The waiter is asleep on the tree once it has the tree file open.
	p, err := readLock(dir, "job")
	if err != nil {
		t.Fatal(err)
	}
	tree := strings.TrimSuffix(lockFile(dir, "job"), ".lock") + ".tree." + p.LockID
	waitFor(t, defaultDeadline, func() bool { return hasOpen(waiter.cmd.Process.Pid, tree) || waiter.ended() }, "the waiter to block on the tree file")
	if waiter.ended() {
		o, _ := waiter.wait(time.Second)
		t.Fatalf("the waiter ended (%d) while the tree held the lock:\n%s", o.code, o.stderr)
	}
	killed := time.Now()
	if err := syscall.Kill(survivor, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	o, err := waiter.wait(defaultDeadline)
	if err != nil || o.code != 0 {
		t.Fatalf("waiter exited %d (%v):\n%s", o.code, err, o.stderr)
	}
	// The directory watch's safety poll is 5 s ± 25 %; a wake-up well
	// inside it came from the flock.
	if took := time.Since(killed); took > 3*time.Second {
		t.Errorf("the waiter took %v after the tree ended, want well under the 3.75 s minimum of a poll", took)
	}
}

type descriptor struct {
	fd     int
	target string
}

// descriptorsUnder lists process pid's open descriptors of files in dir.
func descriptorsUnder(pid int, dir string) []descriptor {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(fdDir)
	var out []descriptor
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, _ := os.Readlink(filepath.Join(fdDir, e.Name()))
		if strings.HasPrefix(target, dir+"/") {
			out = append(out, descriptor{fd, target})
		}
	}
	return out
}

// hasOpen reports whether process pid has path open.
func hasOpen(pid int, path string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}
