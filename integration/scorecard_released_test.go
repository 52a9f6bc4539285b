package integration

// Scorecard row "always released": whatever way a run ends — the child
// exits 0 or not, dies of a signal, is timed out, cannot be started,
// withlock is TERMed, or lock operations fail underneath it — an immediate
// non-blocking acquire succeeds afterwards.

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// exitPath is one way a run ends.
type exitPath struct {
	name     string
	args     []string // flags before RUN_ID
	child    []string
	wantCode int
	// during, when set, runs once the child has started (its argument is
	// the lock dir): it acts on withlock or on the lock files.
	during func(t *testing.T, p *execProc, dir string)
	// after, when set, undoes an injected fault before the acquire check.
	after func(t *testing.T, dir string)
}

// startedChild prints a ready file ($1) then runs the rest.
func startedChild(script string) []string {
	return []string{"sh", "-c", `: >"$1"; ` + script}
}

func exitPaths() []exitPath {
	return []exitPath{
		{name: "normal", child: startedChild("exit 0"), wantCode: 0},
		{name: "child error", child: startedChild("exit 3"), wantCode: 3},
		{name: "child signalled", child: startedChild("kill -KILL $$"), wantCode: 128 + 9},
		{name: "timeout", args: []string{"--timeout", "300ms", "--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 124},
		{name: "not found", child: []string{"/nonexistent/withlock-scorecard"}, wantCode: 127},
		{name: "not executable", child: []string{"/etc/hostname"}, wantCode: 126},
		{name: "withlock TERMed", args: []string{"--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 128 + 15,
			during: func(t *testing.T, p *execProc, _ string) { signalProc(t, p, syscall.SIGTERM) }},
		{name: "withlock INTed", args: []string{"--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 128 + 2,
			during: func(t *testing.T, p *execProc, _ string) { signalProc(t, p, syscall.SIGINT) }},
		{name: "withlock HUPed, child dies of it", child: startedChild("exec sleep 30"), wantCode: 128 + 1,
			during: func(t *testing.T, p *execProc, _ string) { signalProc(t, p, syscall.SIGHUP) }},
		// injected lock-operation errors
		{name: "lock file deleted under the holder", args: []string{"--ttl", "1s", "--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 76,
			during: func(t *testing.T, _ *execProc, dir string) { removeLockFiles(t, dir) }},
		{name: "lock dir deleted under the holder", args: []string{"--ttl", "1s", "--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 76,
			during: func(t *testing.T, _ *execProc, dir string) {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "lock file replaced by garbage", args: []string{"--ttl", "1s", "--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 76,
			during: func(t *testing.T, _ *execProc, dir string) { corruptLockFiles(t, dir) }},
		// renewals fail until the lock expires: that is a lost lock
		{name: "lock dir unwritable, renewals fail", args: []string{"--ttl", "1s", "--grace", "1s"}, child: startedChild("exec sleep 30"), wantCode: 76,
			during: func(t *testing.T, _ *execProc, dir string) { makeUnwritable(t, dir) },
			after:  func(t *testing.T, dir string) { makeWritable(t, dir) }},
		// the release fails: logged, the child's status passes, and the lock
		// (its holder dead) is free for the next acquirer at once
		{name: "lock dir unwritable, release fails", child: startedChild("sleep 0.3"), wantCode: 0,
			during: func(t *testing.T, _ *execProc, dir string) { makeUnwritable(t, dir) },
			after:  func(t *testing.T, dir string) { makeWritable(t, dir) }},
	}
}

func TestScorecardAlwaysReleased(t *testing.T) {
	for _, ep := range exitPaths() {
		t.Run(ep.name, func(t *testing.T) {
			work := t.TempDir()
			dir := filepath.Join(work, "locks")
			ready := filepath.Join(work, "ready")
			args := append(append([]string{"run", "--dir", dir}, ep.args...), "released", "--")
			args = append(args, ep.child...)
			if ep.child[0] == "sh" {
				args = append(args, "sh", ready)
			}
			p := startProc(binary(t), testEnv(t), args...)
			t.Cleanup(func() { stopProc(p) })
			if ep.during != nil {
				if !waitForFile(ready, 10*time.Second, p.ended) {
					o, _ := p.wait(time.Second)
					t.Fatalf("child never started: exit %d\nstderr: %s", o.code, o.stderr)
				}
				ep.during(t, p, dir)
			}
			o, err := p.wait(defaultDeadline)
			if err != nil {
				t.Fatal(err)
			}
			if ep.after != nil {
				ep.after(t, dir)
			}
			if o.code != ep.wantCode {
				t.Errorf("exit %d, want %d\nstderr: %s", o.code, ep.wantCode, o.stderr)
			}
			assertNoPanic(t, ep.name, o.stderr)
			assertFreeNow(t, dir, "released", ep.name)
		})
	}
}

func signalProc(t *testing.T, p *execProc, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// theLockFile is the one lock file in dir.
func theLockFile(t *testing.T, dir string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	if len(matches) != 1 {
		t.Fatalf("lock files in %s: %v, want one", dir, matches)
	}
	return matches[0]
}

func removeLockFiles(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(theLockFile(t, dir)); err != nil {
		t.Fatal(err)
	}
}

// corruptLockFiles replaces the lock file with bytes that do not parse,
// dated as if written long ago (a fresh unparseable file counts as held
// for 2 s: a foreign writer may be mid-write).
func corruptLockFiles(t *testing.T, dir string) {
	t.Helper()
	lockFile := theLockFile(t, dir)
	tmp := lockFile + ".garbage"
	if err := os.WriteFile(tmp, []byte("\x00\xffnot json{"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(tmp, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, lockFile); err != nil {
		t.Fatal(err)
	}
}

// makeUnwritable makes dir refuse new entries and removals: chmod for an
// ordinary user, the immutable attribute for root (whom chmod does not stop).
func makeUnwritable(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot make %s unwritable as root (chattr +i: %v: %s); this exit path needs a filesystem with the immutable attribute", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", dir).Run() })
}

func makeWritable(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return
	}
	if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
		t.Fatalf("chattr -i %s: %v: %s", dir, err, out)
	}
}
