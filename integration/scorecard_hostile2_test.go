package integration

// Scorecard block "hostile input" (issues 16 and 17): what a hostile or
// merely unusual environment does to the one promise, at most one holder.
// Every row runs the built binary with real processes, real users
// (setpriv), real pid namespaces (unshare), real limits (ulimit) and real
// filesystems (tmpfs). Rows that guard against two holders have a negative
// control that shows the row's check can see a second holder.

import (
	"encoding/json"
	"fmt"
	"github.com/withlock/withlock/internal/failpoint"
	"github.com/withlock/withlock/locks/filelock"
	"github.com/withlock/withlock/locks/history"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

// tagBrokenProcView: a build that trusts any /proc as its own namespace's,
// as withlock did before it checked (the pid-namespace row's control).
const tagBrokenProcView = failpoint.TrustForeignProc

const nobody = 65534

// sharedBin is a copy of the binary under test that other users can run
// (the build directory is private to root).
var sharedBin struct {
	once      sync.Once
	dir, path string
	err       error
}

func binaryForAll(t *testing.T, bin string) string {
	t.Helper()
	sharedBin.once.Do(func() {
		sharedBin.dir, sharedBin.err = os.MkdirTemp("", "withlock-hostile2-bin-")
		if sharedBin.err != nil {
			return
		}
		sharedBin.err = os.Chmod(sharedBin.dir, 0o755)
	})
	if sharedBin.err != nil {
		t.Fatal(sharedBin.err)
	}
	dst := filepath.Join(sharedBin.dir, strconv.Itoa(len(bin))+"-"+filepath.Base(bin))
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	if script, err := os.ReadFile(bin); err == nil && strings.HasPrefix(string(script), "#!") {
		// A failpoint wrapper (taggedBinary): share what it execs too.
		target := noraceBuild.path
		shared := strings.ReplaceAll(string(script), "'"+target+"'", "'"+binaryForAll(t, target)+"'")
		if err := os.WriteFile(dst, []byte(shared), 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	in, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// needRoot skips a row that needs root to change users, mount or unshare.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (setpriv, chown, mount, unshare)")
	}
}

// openDir is a directory every user can reach: under a 0755 temp dir of its
// own (t.TempDir's parent is private to root), removed after the test.
func openDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	base, err := os.MkdirTemp("", "withlock-hostile2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// asUser returns bin run as uid (its own group, no supplementary groups).
func asUser(t *testing.T, uid int, bin string, args ...string) *exec.Cmd {
	t.Helper()
	id := strconv.Itoa(uid)
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", binaryForAll(t, bin)}, args...)...)
	cmd.Env = testEnv(t)
	return cmd
}

// holderCmd is a command that marks that it started, then holds for a minute.
func holderCmd(started string) []string {
	return []string{"sh", "-c", `touch "$0"; exec sleep 60`, started}
}

// ranCmd is a command that only records that it ran.
func ranCmd(marker string) []string { return []string{"touch", marker} }

func exists(path string) bool { _, err := os.Lstat(path); return err == nil }

// oneLine checks a refusal: exit want, one "withlock: " line saying each of
// says, and the command not run.
func oneLine(t *testing.T, what string, code, want int, stderr, marker string, says ...string) {
	t.Helper()
	assertNoPanic(t, what, stderr)
	if code != want {
		t.Errorf("%s: exit %d, want %d\nstderr: %s", what, code, want, stderr)
	}
	if !strings.HasPrefix(stderr, "withlock: ") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("%s: stderr %q, want one line", what, stderr)
	}
	for _, s := range says {
		if !strings.Contains(stderr, s) {
			t.Errorf("%s: stderr %q does not say %q", what, stderr, s)
		}
	}
	if marker != "" && exists(marker) {
		t.Errorf("%s: the command ran", what)
	}
}

// startHolder starts cmd and waits until its command marked started.
func startHolder(t *testing.T, cmd *exec.Cmd, started string) {
	t.Helper()
	startCommand(t, cmd)
	waitFor(t, 10*time.Second, func() bool { return exists(started) || exited(t, cmd) }, "the holder to start")
	if !exists(started) {
		_, stderr := outputOf(cmd)
		t.Fatalf("holder %s ended before its command started: %s", cmd, stderr)
	}
}

// stopHolder ends a holder started by startHolder (TERM) and waits for it.
func stopHolder(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	waitExit(t, cmd, defaultDeadline)
}

// TestScorecardHostileDefaultDir (issue 17): a job from cron's environment
// (env -i PATH=/usr/bin:/bin) and one from a login shell (XDG_RUNTIME_DIR,
// TMPDIR set) take the same lock with no --dir and no WITHLOCK_DIR, and
// each sees the other in status. As root the default is /run/withlock, as
// uid 65534 /tmp/withlock-65534: real machine dirs, so the run id is unique
// to this test run and its files are removed after.
func TestScorecardHostileDefaultDir(t *testing.T) {
	needRoot(t)
	for _, uid := range []int{0, nobody} {
		t.Run("uid "+strconv.Itoa(uid), func(t *testing.T) {
			runID := "hostile2-default-" + runToken
			work := openDir(t, 0o777)
			defaultDir := "/run/withlock"
			if uid != 0 {
				defaultDir = "/tmp/withlock-" + strconv.Itoa(uid)
			}
			t.Cleanup(func() {
				key := locks.Key(runID)
				for _, ext := range []string{".lock", ".guard", ".fence"} {
					os.Remove(filepath.Join(defaultDir, key+ext))
				}
			})
			cron := func(args ...string) *exec.Cmd {
				cmd := asUser(t, uid, withlockBin, args...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", markVar + "=" + markOf(t)}
				return cmd
			}
			login := func(args ...string) *exec.Cmd {
				cmd := asUser(t, uid, withlockBin, args...)
				cmd.Env = append(withoutVar(testEnv(t), "WITHLOCK_DIR"), "TMPDIR="+work, "HOME="+work)
				return cmd
			}
			started := filepath.Join(work, "started")
			holder := cron(append([]string{"run", runID, "--"}, holderCmd(started)...)...)
			startHolder(t, holder, started)

			ran := filepath.Join(work, "ran")
			_, stderr, code := runCommand(t, login(append([]string{"run", runID, "--"}, ranCmd(ran)...)...), defaultDeadline)
			oneLine(t, "login-shell run beside the cron job", code, 75, stderr, ran, "is locked by pid "+strconv.Itoa(holder.Process.Pid))
			stdout, _, code := runCommand(t, login("status", runID), defaultDeadline)
			if code != 0 || !strings.Contains(stdout, "held") {
				t.Errorf("status from the login shell: exit %d, %q; want the cron job's lock held", code, stdout)
			}

			// Negative control: the login shell's old default,
			// $XDG_RUNTIME_DIR/withlock, is another lock: its command runs
			// beside the cron job, and the check above would see it.
			control := login(append([]string{"run", "--dir", filepath.Join(work, "xdg-withlock"), runID, "--"}, ranCmd(ran)...)...)
			if _, stderr, code := runCommand(t, control, defaultDeadline); code != 0 || !exists(ran) {
				t.Errorf("control (another dir): exit %d, ran %v; want the command to run beside the holder\n%s", code, exists(ran), stderr)
			}
			os.Remove(ran)

			stopHolder(t, holder)
			stdout, _, code = runCommand(t, cron("status", runID), defaultDeadline)
			if code != 0 || !strings.Contains(stdout, "free") {
				t.Errorf("status from cron after the release: exit %d, %q; want free", code, stdout)
			}
		})
	}
}

// TestScorecardHostileBounds (issue 16): TTLs outside 1 s … 1 year and run
// ids over 4 KiB are usage errors (64) before anything runs — a 1 ns TTL
// renewed every millisecond and let a contender in, a 2,100,000 h one
// overflowed expires_at into the past, a 70 KiB run id made the lock file
// too large to read, and each let a second holder run.
func TestScorecardHostileBounds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	work := t.TempDir()
	ran := filepath.Join(work, "ran")
	longID := strings.Repeat("<", 11000)
	cases := []struct {
		name string
		args []string
		env  []string
		says string
	}{
		{"--ttl 1ns", []string{"--ttl", "1ns", "x"}, nil, "--ttl 1ns: ttl must be between 1s and 1 year"},
		{"--ttl 2100000h", []string{"--ttl", "2100000h", "x"}, nil, "--ttl 2100000h0m0s: ttl must be between"},
		{"WITHLOCK_TTL=99999999999", []string{"x"}, []string{"WITHLOCK_TTL=99999999999"}, `WITHLOCK_TTL="99999999999"`},
		{"WITHLOCK_TTL=1ms", []string{"x"}, []string{"WITHLOCK_TTL=1ms"}, `WITHLOCK_TTL="1ms"`},
		{"NEXUSCORE_RUN_LOCK_TTL_SECONDS=99999999999", []string{"x"}, []string{"NEXUSCORE_RUN_LOCK_TTL_SECONDS=99999999999"}, "NEXUSCORE_RUN_LOCK_TTL_SECONDS"},
		{"run id of 4097 bytes", []string{strings.Repeat("r", 4097)}, nil, "(4097 bytes): longer than 4096 bytes"},
		{"run id of 11,000 '<'", []string{longID}, nil, "(11000 bytes): longer than 4096 bytes"},
		{"run id of 70 KiB", []string{strings.Repeat("x", 70<<10)}, nil, "longer than 4096 bytes"},
	}
	for _, c := range cases {
		cmd := withlockCommand(t, append(append([]string{"run", "--dir", dir}, c.args...), append([]string{"--"}, ranCmd(ran)...)...)...)
		cmd.Env = append(cmd.Env, c.env...)
		_, stderr, code := runCommand(t, cmd, defaultDeadline)
		oneLine(t, c.name, code, 64, stderr, ran, c.says)
		if len(stderr) > 400 {
			t.Errorf("%s: a %d-byte message", c.name, len(stderr))
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left in the lock dir: %v", entries)
	}
	// Negative control: the bounds themselves are accepted and run.
	for _, args := range [][]string{{"--ttl", "1s", "x"}, {"--ttl", "8760h", "x"}, {strings.Repeat("<", 4096)}} {
		cmd := withlockCommand(t, append(append([]string{"run", "--dir", dir}, args...), append([]string{"--"}, ranCmd(ran)...)...)...)
		if _, stderr, code := runCommand(t, cmd, defaultDeadline); code != 0 || !exists(ran) {
			t.Errorf("control %q: exit %d, ran %v: %s", args[0][:min(len(args[0]), 12)], code, exists(ran), stderr)
		}
		os.Remove(ran)
	}
}

// TestRunIDBoundInStatusAndBreak: SPEC §3's 4 KiB bound holds for every
// command that takes a run id, not only run: status and break of a longer
// one are usage errors (64, one line), and status names every run id it is
// given. Before, both answered for it ("free", "no lock", 0). Control: a
// 4096-byte run id is looked up as any other.
func TestRunIDBoundInStatusAndBreak(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	long := strings.Repeat("<", 4097)
	for _, args := range [][]string{{"status", long}, {"status", "--json", "ok", long}, {"break", long}, {"break", "--force", long}} {
		cmd := withlockCommand(t, append([]string{args[0], "--dir", dir}, args[1:]...)...)
		stdout, stderr, code := runCommand(t, cmd, defaultDeadline)
		oneLine(t, strings.Join(args[:len(args)-1], " "), code, 64, stderr, "", "(4097 bytes): longer than 4096 bytes")
		if stdout != "" {
			t.Errorf("%s: printed %d bytes on stdout", args[0], len(stdout))
		}
	}
	for _, args := range [][]string{{"status", long[1:]}, {"break", long[1:]}} {
		cmd := withlockCommand(t, append([]string{args[0], "--dir", dir}, args[1:]...)...)
		if stdout, stderr, code := runCommand(t, cmd, defaultDeadline); code != 0 || stdout == "" {
			t.Errorf("control %s of 4096 bytes: exit %d, stdout %d bytes, stderr %q", args[0], code, len(stdout), stderr)
		}
	}
}

// TestScorecardHostileLargePayload (issue 16): the largest lock withlock
// can write — a 4 KiB run id and a command of 11,000 '<', each escaped to
// six bytes — is read as held past the torn-file grace: the second run is
// refused (75) while the first holds, and the first releases cleanly.
// Negative control: the same holder's lock file padded past the reader's
// 64 KiB cap (what a 70 KiB run id produced) is reclaimed beside it, and
// this row's check sees the second holder.
func TestScorecardHostileLargePayload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	work := t.TempDir()
	runID := strings.Repeat("<", 4096)
	started, ran := filepath.Join(work, "started"), filepath.Join(work, "ran")
	holder := withlockCommand(t, "run", "--dir", dir, runID, "--", "sh", "-c", `touch "$0"; exec sleep 60`, started, strings.Repeat("<", 11000))
	startHolder(t, holder, started)
	// Past TornGrace: a lock read as corrupt would be reclaimed by now.
	time.Sleep(filelock.TornGrace + 500*time.Millisecond)
	_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, runID, "--"}, ranCmd(ran)...)...)
	if code != 75 || exists(ran) {
		t.Errorf("second run beside the large lock: exit %d, ran %v, want 75 and not run\n%s", code, exists(ran), stderr)
	}
	data, err := os.ReadFile(lockFile(dir, runID))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) >= locks.MaxPayload/2 {
		t.Errorf("lock file of %d bytes, want far below the %d-byte cap", len(data), locks.MaxPayload)
	}

	// Control: pad the live lock over the cap, aged past the grace.
	padded := append(append([]byte(nil), data[:len(data)-2]...), []byte(`,"pad":"`+strings.Repeat("a", locks.MaxPayload)+`"}`)...)
	if err := os.WriteFile(lockFile(dir, runID), padded, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	os.Chtimes(lockFile(dir, runID), old, old)
	_, stderr, code = runWithlock(t, append([]string{"run", "--dir", dir, runID, "--"}, ranCmd(ran)...)...)
	if code != 0 || !exists(ran) {
		t.Errorf("control: an over-cap lock file was not reclaimed (exit %d, ran %v): the row could not see a second holder\n%s", code, exists(ran), stderr)
	}
	stopHolder(t, holder)
}

// TestScorecardHostileLockDirModes (issues 16, 17): a root-owned 0770 dir
// is refused (a group member could plant a lock that never expires); the
// shared dirs flock users know — /run/lock, /var/lock (a root-owned symlink
// to it), any root-owned sticky dir — work for root and for others; a
// symlink that root does not own is refused.
func TestScorecardHostileLockDirModes(t *testing.T) {
	needRoot(t)
	ran := filepath.Join(openDir(t, 0o777), "ran")
	refuse := []struct {
		name string
		dir  func() string
		says []string
	}{
		{"root-owned 0770", func() string { return openDir(t, 0o770) }, []string{"writable by its group (mode 0770, owner root)", "chmod go-w"}},
		{"root-owned 0777, not sticky", func() string { return openDir(t, 0o777) }, []string{"writable by group and others (mode 0777"}},
		{"sticky 1777 owned by uid 65534", func() string {
			d := openDir(t, 0o777|os.ModeSticky)
			os.Chown(d, nobody, nobody)
			return d
		}, []string{"owned by uid 65534"}},
		{"symlink owned by uid 65534 to /run/lock", func() string {
			l := filepath.Join(filepath.Dir(openDir(t, 0o700)), "lnk")
			os.Symlink("/run/lock", l)
			os.Lchown(l, nobody, nobody)
			return l
		}, []string{"symlink owned by uid 65534"}},
	}
	for _, c := range refuse {
		dir := c.dir()
		_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, "x", "--"}, ranCmd(ran)...)...)
		oneLine(t, c.name, code, 73, stderr, ran, append(c.says, dir)...)
	}

	if fi, err := os.Lstat("/var/lock"); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Logf("/var/lock is not a symlink here (%v); the shared-dir cases use /run/lock and a sticky temp dir", err)
	}
	shared := []string{"/run/lock", "/var/lock", openDir(t, 0o777|os.ModeSticky)}
	for _, dir := range shared {
		if !exists(dir) {
			continue
		}
		for _, uid := range []int{0, nobody} {
			runID := fmt.Sprintf("hostile2-shared-%d-%s", uid, runToken)
			_, stderr, code := runCommand(t, asUser(t, uid, withlockBin, append([]string{"run", "--dir", dir, runID, "--"}, ranCmd(ran)...)...), defaultDeadline)
			if code != 0 || !exists(ran) {
				t.Errorf("--dir %s as uid %d: exit %d, ran %v: %s", dir, uid, code, exists(ran), stderr)
			}
			os.Remove(ran)
			key := filepath.Join(dir, locks.Key(runID))
			if exists(key + ".lock") {
				t.Errorf("--dir %s as uid %d: lock left behind", dir, uid)
			}
			os.Remove(key + ".guard")
			os.Remove(key + ".fence")
		}
	}
}

// TestScorecardHostileSharedDir (issues 16, 17): in a shared (sticky,
// world-writable) dir, users meet under one run id. Another user's live
// lock is a conflict naming its owner; its stale lock is moved aside only
// by root (others: 73 naming the owner); a guard another user planted and
// holds for ever ends `--wait forever` with 73, never a silent hang.
// Negative control: root does reclaim the dead holder's lock, so the
// "command ran" check can see a second holder.
func TestScorecardHostileSharedDir(t *testing.T) {
	needRoot(t)
	dir := openDir(t, 0o777|os.ModeSticky)
	work := openDir(t, 0o777)
	started, ran := filepath.Join(work, "started"), filepath.Join(work, "ran")
	const other = 65533 // a second unprivileged user

	holder := asUser(t, nobody, withlockBin, append([]string{"run", "--dir", dir, "job", "--"}, holderCmd(started)...)...)
	startHolder(t, holder, started)
	for _, uid := range []int{0, other} {
		_, stderr, code := runCommand(t, asUser(t, uid, withlockBin, append([]string{"run", "--dir", dir, "job", "--"}, ranCmd(ran)...)...), defaultDeadline)
		oneLine(t, fmt.Sprintf("uid %d beside uid 65534's live lock", uid), code, 75, stderr, ran, "of uid 65534")
	}
	// The holder dies without releasing: its lock is stale (holder dead).
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitExit(t, holder, defaultDeadline)
	// withlock's command (sleep) dies with it (parent-death signal).
	_, stderr, code := runCommand(t, asUser(t, other, withlockBin, append([]string{"run", "--dir", dir, "job", "--"}, ranCmd(ran)...)...), defaultDeadline)
	oneLine(t, "uid 65533 on uid 65534's stale lock", code, 73, stderr, ran, "belongs to uid 65534", "only root or its owner")
	if !exists(lockFile(dir, "job")) {
		t.Errorf("uid 65533 moved uid 65534's stale lock")
	}
	// Control: root moves it aside and runs.
	_, stderr, code = runWithlock(t, append([]string{"run", "--dir", dir, "job", "--"}, ranCmd(ran)...)...)
	if code != 0 || !exists(ran) {
		t.Errorf("control: root on a dead holder's lock: exit %d, ran %v: %s", code, exists(ran), stderr)
	}
	os.Remove(ran)

	// A guard planted by uid 65534 for run id "planted" and held for ever.
	guard := filepath.Join(dir, locks.Key("planted")+".guard")
	planter := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"sh", "-c", `umask 0; touch "$0" && chmod 666 "$0" && exec flock "$0" sleep 60`, guard)
	planter.Env = testEnv(t)
	planter.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startCommand(t, planter)
	if !pollUntil(10*time.Second, func() bool {
		return exists(guard) && exec.Command("flock", "-n", guard, "true").Run() != nil
	}) {
		stdout, stderr := outputOf(planter)
		t.Fatalf("the planted guard is not held: %s %s", stdout, stderr)
	}
	for _, uid := range []int{0, other} {
		start := time.Now()
		_, stderr, code := runCommand(t, asUser(t, uid, withlockBin, append([]string{"run", "--dir", dir, "--wait", "forever", "planted", "--"}, ranCmd(ran)...)...), defaultDeadline)
		oneLine(t, fmt.Sprintf("uid %d --wait forever on a planted guard", uid), code, 73, stderr, ran, "guard", "belongs to uid 65534")
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("uid %d: refused only after %v", uid, d)
		}
	}
	_ = syscall.Kill(-planter.Process.Pid, syscall.SIGKILL) // flock and its sleep
	waitExit(t, planter, defaultDeadline)
}

// TestScorecardHostileRootReadsAnyDir (issue 17): root's status reads
// another user's private lock dir.
func TestScorecardHostileRootReadsAnyDir(t *testing.T) {
	needRoot(t)
	dir := openDir(t, 0o755)
	os.Chown(dir, nobody, nobody)
	os.Chmod(dir, 0o700)
	work := openDir(t, 0o777)
	started := filepath.Join(work, "started")
	holder := asUser(t, nobody, withlockBin, append([]string{"run", "--dir", dir, "job", "--"}, holderCmd(started)...)...)
	startHolder(t, holder, started)
	stdout, stderr, code := runWithlock(t, "status", "--dir", dir, "job")
	if code != 0 || !strings.Contains(stdout, "held") {
		t.Errorf("root's status of uid 65534's dir: exit %d, %q, %q; want the lock held", code, stdout, stderr)
	}
	// Running there is still refused for root: the dir is not root's.
	_, stderr, code = runWithlock(t, "run", "--dir", dir, "job", "--", "true")
	oneLine(t, "root running in uid 65534's private dir", code, 73, stderr, "", "owned by uid 65534")
	stopHolder(t, holder)
}

// TestScorecardHostileFencing (issue 16): the fencing token never goes down
// and never wraps — across a wiped lock dir, a garbage .fence file (which
// recovers, with a log line, instead of 73 for ever), and a lock carrying
// 2^64−1 (73 and one line, the command not run).
func TestScorecardHostileFencing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	tokenOf := func(what string) uint64 {
		t.Helper()
		stdout, stderr, code := runWithlock(t, "run", "--dir", dir, "job", "--", "sh", "-c", `echo "$WITHLOCK_FENCING_TOKEN"`)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", what, code, stderr)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(stdout), 10, 64)
		if err != nil {
			t.Fatalf("%s: token %q: %v", what, stdout, err)
		}
		return n
	}
	first := tokenOf("first run")
	second := tokenOf("second run")
	if second <= first {
		t.Errorf("token %d after %d", second, first)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	wiped := tokenOf("run after the dir was wiped")
	if wiped <= second {
		t.Errorf("token %d after a wiped dir, not above %d", wiped, second)
	}
	if err := os.WriteFile(filepath.Join(dir, locks.Key("job")+".fence"), []byte("not a number\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := tokenOf("run after a garbage .fence")
	if garbage <= wiped {
		t.Errorf("token %d after a garbage .fence, not above %d", garbage, wiped)
	}
	p := expiredPayload("job")
	p.FencingToken = 1<<64 - 1
	plantLock(t, dir, "job", p)
	ran := filepath.Join(t.TempDir(), "ran")
	_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, "job", "--"}, ranCmd(ran)...)...)
	oneLine(t, "a lock carrying 2^64-1", code, 73, stderr, ran, "18446744073709551615", "cannot grow")
}

// TestScorecardHostilePidNamespace (issue 16): in a pid namespace without
// its own /proc (unshare --pid --fork, no --mount-proc) withlock's pid
// means nothing to /proc: a holder there is judged by its TTL alone —
// never "pid reused" beside a live holder, and runs never fail with 73.
// With --mount-proc, and from the host, the holder is excluded too.
// Negative control: a build that trusts the foreign /proc and takes no tree
// file reclaims the live holder, and the row sees the second holder.
func TestScorecardHostilePidNamespace(t *testing.T) {
	needRoot(t)
	if err := exec.Command("unshare", "--pid", "--fork", "true").Run(); err != nil {
		t.Skipf("unshare --pid unavailable: %v", err)
	}
	check := func(t *testing.T, bin string) (doubles int) {
		dir := filepath.Join(t.TempDir(), "locks")
		work := t.TempDir()
		started := filepath.Join(work, "started")
		holder := exec.Command("unshare", append([]string{"--pid", "--fork", "--kill-child=SIGTERM", bin, "run", "--dir", dir, "ns", "--"}, holderCmd(started)...)...)
		holder.Env = testEnv(t)
		startHolder(t, holder, started)
		inner := childOf(t, holder.Process.Pid) // withlock, as the host sees it
		contenders := map[string][]string{
			"the same namespace, no /proc of its own": {"nsenter", "--pid=/proc/" + strconv.Itoa(inner) + "/ns/pid", "--"},
			"another namespace without /proc":         {"unshare", "--pid", "--fork"},
			"a namespace with its own /proc":          {"unshare", "--pid", "--fork", "--mount-proc"},
			"the host":                                nil,
		}
		doubles = contendBeside(t, bin, dir, "ns", contenders)
		// unshare does not pass TERM on; killed, it has its child (withlock,
		// the namespace's init) sent TERM (--kill-child), which releases.
		_ = holder.Process.Kill()
		waitExit(t, holder, defaultDeadline)
		waitFor(t, 10*time.Second, func() bool { return !exists(lockFile(dir, "ns")) }, "the holder to release")
		return doubles
	}
	t.Run("row", func(t *testing.T) {
		if n := check(t, withlockBin); n != 0 {
			t.Errorf("%d contenders ran beside a live holder in a pid namespace", n)
		}
		// Runs in fresh namespaces without /proc, as pid 1 and at pids the
		// host does not have (the ones before it are taken by /bin/true):
		// all succeed. (Before, withlock read its own start time from the
		// host's /proc/<pid> and failed with 73 when there was none.)
		dir := filepath.Join(t.TempDir(), "locks")
		for _, pid := range append([]int{1}, freeHostPids(3)...) {
			script := `i=2; while [ $i -lt "$2" ]; do /bin/true; i=$((i+1)); done; "$0" run --dir "$1" seq -- sh -c 'echo $PPID'`
			cmd := exec.Command("unshare", "--pid", "--fork", "sh", "-c", script, withlockBin, dir, strconv.Itoa(pid))
			cmd.Env = testEnv(t)
			stdout, stderr, code := runCommand(t, cmd, defaultDeadline)
			if code != 0 {
				t.Errorf("run at namespace pid %d (none on the host): exit %d: %s", pid, code, stderr)
			} else if got := strings.TrimSpace(stdout); pid > 1 && got != strconv.Itoa(pid) {
				t.Logf("withlock ran at namespace pid %s, not %d", got, pid)
			}
		}
	})
	// Two layers exclude here, each enough alone: the check of which pid
	// namespace /proc belongs to (a build without tree files still
	// excludes), and the tree file's flock, a kernel object seen from
	// every namespace (a build trusting the foreign /proc reads the holder
	// as dead, probes its tree and still excludes).
	for _, tag := range []string{tagNoTree, tagBrokenProcView} {
		t.Run("each layer alone: "+tag, func(t *testing.T) {
			if n := check(t, taggedBinary(t, tag)); n != 0 {
				t.Errorf("%s: %d contenders ran beside a live holder in a pid namespace", tag, n)
			}
		})
	}
	t.Run("negative control", func(t *testing.T) {
		both := tagBrokenProcView + "," + tagNoTree
		if n := check(t, taggedBinary(t, both)); n == 0 {
			t.Errorf("the build with neither layer excluded every contender: the row cannot fail")
		}
	})
}

// TestScorecardHostileFewDescriptors (issue 16): under ulimit -n 6 … 12 a
// run ends in 73 with one line before its command runs, or in a normal
// release after it — never a Go runtime crash, never a lock left behind.
func TestScorecardHostileFewDescriptors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	work := t.TempDir()
	for _, n := range []int{6, 7, 8, 9, 10, 12, 16, 24, 32, 64} {
		ran := filepath.Join(work, "ran"+strconv.Itoa(n))
		runID := "fd" + strconv.Itoa(n)
		cmd := exec.Command("bash", "-c", `ulimit -n "$1" && exec "$0" run --dir "$2" "$3" -- touch "$4"`,
			withlockBin, strconv.Itoa(n), dir, runID, ran)
		cmd.Env = testEnv(t)
		_, stderr, code := runCommand(t, cmd, defaultDeadline)
		assertNoPanic(t, "ulimit -n "+strconv.Itoa(n), stderr)
		switch {
		case code == 73:
			oneLine(t, "ulimit -n "+strconv.Itoa(n), code, 73, stderr, ran, "ulimit -n")
		case code == 0 && exists(ran):
		default:
			t.Errorf("ulimit -n %d: exit %d, ran %v: %s", n, code, exists(ran), stderr)
		}
		if exists(lockFile(dir, runID)) {
			t.Errorf("ulimit -n %d: lock left behind", n)
		}
		t.Logf("ulimit -n %d: exit %d", n, code)
	}
	// A generous limit runs (the row is not "always 73").
	if !exists(filepath.Join(work, "ran64")) {
		t.Errorf("ulimit -n 64 did not run the command")
	}
	// The commands that supervise nothing: 73 and one line, or their
	// normal result — before, ulimit -n 6 or 7 aborted them in the Go
	// runtime ("netpollinit failed", a goroutine dump, exit 2).
	for _, args := range [][]string{{"status", "--dir", dir}, {"gc", "--dir", dir}, {"break", "--dir", dir, "fd64"}} {
		worked := false
		for _, n := range []int{5, 6, 7, 8, 10, 16, 64} {
			what := fmt.Sprintf("ulimit -n %d: %s", n, args[0])
			cmd := exec.Command("bash", append([]string{"-c", `ulimit -n "$1" && shift && exec "$0" "$@"`, withlockBin, strconv.Itoa(n)}, args...)...)
			cmd.Env = testEnv(t)
			_, stderr, code := runCommand(t, cmd, defaultDeadline)
			assertNoPanic(t, what, stderr)
			switch {
			case code == 73 && strings.Contains(stderr, "ulimit -n"):
				oneLine(t, what, code, 73, stderr, "", "too few file descriptors")
			case code == 0:
				worked = worked || n == 64
			default:
				t.Errorf("%s: exit %d: %s", what, code, stderr)
			}
		}
		if !worked {
			t.Errorf("%s under ulimit -n 64 did not work", args[0])
		}
	}
}

// TestScorecardHostileFullDisk (issue 16): a lock dir on a tiny tmpfs with
// no inodes left, or no space left: 73 naming the cause before the command
// runs, nothing half-written left behind.
func TestScorecardHostileFullDisk(t *testing.T) {
	needRoot(t)
	for _, full := range []string{"no inodes", "no space"} {
		t.Run(full, func(t *testing.T) {
			dir := t.TempDir()
			if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,nr_inodes=16,mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
				t.Skipf("mount tmpfs: %v %s", err, out)
			}
			t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
			before := fill(t, dir, full)
			ran := filepath.Join(t.TempDir(), "ran")
			_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, "job", "--"}, ranCmd(ran)...)...)
			oneLine(t, full, code, 73, stderr, ran, dir)
			if !strings.Contains(stderr, "no space left on device") {
				t.Errorf("%s: stderr %q does not name ENOSPC", full, stderr)
			}
			if n := strings.Count(stderr, `run "job"`); n != 1 {
				t.Errorf("%s: stderr %q names the run %d times, want once", full, stderr, n)
			}
			// The guard and the fence are empty sidecars (a flock target and
			// a counter that reads as lost); no lock or temp file may stay.
			after, _ := os.ReadDir(dir)
			var left []string
			for _, e := range after {
				if n := e.Name(); !strings.HasPrefix(n, "filler") && !strings.HasSuffix(n, ".guard") && !strings.HasSuffix(n, ".fence") {
					left = append(left, n)
				}
			}
			if len(left) > 0 || len(after) > before+2 {
				t.Errorf("%s: left behind %v (%d entries, %d before)", full, left, len(after), before)
			}
		})
	}
}

// fill uses up a tmpfs's inodes or its space (leaving the other), and
// returns how many entries it made.
func fill(t *testing.T, dir, what string) int {
	t.Helper()
	n := 0
	if what == "no inodes" {
		for ; n < 64; n++ {
			f, err := os.Create(filepath.Join(dir, "filler"+strconv.Itoa(n)))
			if err != nil {
				break
			}
			f.Close()
		}
		return n
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	return 1
}

// childOf returns the one child of pid (unshare's: the namespace's init).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(data))
	if len(fields) != 1 {
		t.Fatalf("pid %d has children %q, want one", pid, fields)
	}
	child, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	return child
}

// freeHostPids returns up to n pids between 10 and 400 that no process has
// on the host now.
func freeHostPids(n int) []int {
	var out []int
	for pid := 10; pid < 400 && len(out) < n; pid++ {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); os.IsNotExist(err) {
			out = append(out, pid)
		}
	}
	return out
}

// TestScorecardHostileDefaultScopeRegistry (issue 17, SPEC §4): the scope
// registry's default follows the run lock's default dir, not
// $XDG_RUNTIME_DIR: a scope taken from cron's environment (env -i
// PATH=/usr/bin:/bin) and a writer of the same path from a login shell
// (XDG_RUNTIME_DIR, TMPDIR set) meet in one registry — a conflict naming
// the holder, and the login shell's status lists it. As root that is
// /run/withlock/scope.lock, as uid 65534 /tmp/withlock-65534/scope.lock:
// real machine files, so the name and path are unique to this test run and
// the holder's allocation goes with it.
// Negative control: the login shell's old default,
// $XDG_RUNTIME_DIR/withlock/scope.lock, is another registry, and the same
// writer is admitted beside the holder.
func TestScorecardHostileDefaultScopeRegistry(t *testing.T) {
	needRoot(t)
	for _, uid := range []int{0, nobody} {
		t.Run("uid "+strconv.Itoa(uid), func(t *testing.T) {
			name := "hostile2-scope-" + runToken
			work := openDir(t, 0o777)
			xdg := filepath.Join(work, "xdg")
			if err := os.Mkdir(xdg, 0o700); err != nil {
				t.Fatal(err)
			}
			os.Chown(xdg, uid, uid)
			allow := filepath.Join(work, "tree") + ":write"
			cron := func(args ...string) *exec.Cmd {
				cmd := asUser(t, uid, withlockBin, args...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", markVar + "=" + markOf(t)}
				return cmd
			}
			login := func(args ...string) *exec.Cmd {
				cmd := asUser(t, uid, withlockBin, args...)
				env := withoutVar(withoutVar(testEnv(t), "WITHLOCK_DIR"), "WITHLOCK_SCOPE_FILE")
				cmd.Env = append(withoutVar(env, "XDG_RUNTIME_DIR"), "XDG_RUNTIME_DIR="+xdg, "TMPDIR="+work, "HOME="+work)
				return cmd
			}
			started := filepath.Join(work, "started")
			holder := cron(append([]string{"scope", "--name", name, "--allow", allow, "--"}, holderCmd(started)...)...)
			startHolder(t, holder, started)
			defer stopHolder(t, holder)

			ran := filepath.Join(work, "ran")
			_, stderr, code := runCommand(t, login(append([]string{"scope", "--allow", allow, "--"}, ranCmd(ran)...)...), defaultDeadline)
			oneLine(t, "login-shell writer beside the cron scope", code, 75, stderr, ran, "held by "+name)
			stdout, _, code := runCommand(t, login("status"), defaultDeadline)
			if code != 0 || !strings.Contains(stdout, name) {
				t.Errorf("status from the login shell: exit %d, %q; want the cron job's scope %s", code, stdout, name)
			}

			control := login(append([]string{"scope", "--scope-file", filepath.Join(xdg, "withlock", "scope.lock"), "--allow", allow, "--"}, ranCmd(ran)...)...)
			if _, stderr, code := runCommand(t, control, defaultDeadline); code != 0 || !exists(ran) {
				t.Errorf("control (the old default registry): exit %d, ran %v; want the writer admitted beside the holder\n%s", code, exists(ran), stderr)
			}
		})
	}
}

// tagBrokenGCOwner is the negative-control build whose gc tries to remove
// other users' leftovers in a shared dir.
const tagBrokenGCOwner = failpoint.CollectAnyOwner

// TestScorecardHostileSharedDirGC (issues 16, 17): gc in a shared (root-owned,
// sticky, world-writable) dir removes only what its caller may remove.
// Root, uid 65534 and uid 65533 each leave a lock moved aside there (a holder
// killed with -9, the lock reclaimed); uid 65533 holds a live lock whose tree
// file is made to look ten days old. A user's gc (and its dry run) lists and
// removes only that user's leftover and exits 0 — before, it listed every
// user's and failed with 73 on the first the sticky bit kept it from
// removing. Root's gc removes everyone's leftovers but never a live lock,
// its tree file, a guard or a fence: the live holder still excludes. With
// --history each user's gc removes its own idle histories and leaves the
// others' (it failed with 73 on the first).
// Negative control: the build that does not check the owner fails the
// user's gc, and the row's check sees it.
func TestScorecardHostileSharedDirGC(t *testing.T) {
	needRoot(t)
	const other = 65533
	users := []int{0, nobody, other}
	setup := func(t *testing.T, bin string) (dir string, stale map[int]string, live *exec.Cmd) {
		dir = openDir(t, 0o777|os.ModeSticky)
		work := openDir(t, 0o777)
		stale = map[int]string{}
		for _, uid := range users {
			runID := "dead-" + strconv.Itoa(uid)
			started := filepath.Join(work, "started-"+runID)
			holder := asUser(t, uid, bin, append([]string{"run", "--dir", dir, runID, "--"}, holderCmd(started)...)...)
			startHolder(t, holder, started)
			_ = holder.Process.Kill()
			waitExit(t, holder, defaultDeadline)
			if _, stderr, code := runCommand(t, asUser(t, uid, bin, "run", "--dir", dir, runID, "--", "true"), defaultDeadline); code != 0 {
				t.Fatalf("uid %d reclaiming its dead holder's lock: exit %d: %s", uid, code, stderr)
			}
			matches, _ := filepath.Glob(lockFile(dir, runID) + ".stale.*")
			if len(matches) != 1 {
				t.Fatalf("uid %d: lock moved aside as %v, want one file", uid, matches)
			}
			// Ten days old: gc reads a moved-aside lock's age from its name.
			aged := lockFile(dir, runID) + ".stale." + strconv.FormatInt(time.Now().Add(-10*24*time.Hour).Unix(), 10)
			if err := os.Rename(matches[0], aged); err != nil {
				t.Fatal(err)
			}
			stale[uid] = aged
		}
		started := filepath.Join(work, "started-live")
		live = asUser(t, other, bin, append([]string{"run", "--dir", dir, "live", "--"}, holderCmd(started)...)...)
		startHolder(t, live, started)
		t.Cleanup(func() { stopHolder(t, live) })
		old := time.Now().Add(-10 * 24 * time.Hour)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".lock") { // the live lock file is renewed anyway; its tree file ages
				os.Chtimes(filepath.Join(dir, e.Name()), old, old)
			}
		}
		return dir, stale, live
	}
	// userGC runs uid's gc (a dry run first) and checks it lists and removes
	// only uid's own leftover; it reports whether it did.
	userGC := func(t *testing.T, bin, dir string, uid int, stale map[int]string) (ok bool) {
		ok = true
		for _, args := range [][]string{{"gc", "--dir", dir, "-n", "--history", "--older-than", "1d"}, {"gc", "--dir", dir, "--history", "--older-than", "1d"}} {
			stdout, stderr, code := runCommand(t, asUser(t, uid, bin, args...), defaultDeadline)
			assertNoPanic(t, "gc", stderr)
			if code != 0 {
				t.Logf("uid %d %v: exit %d: %s", uid, args, code, stderr)
				ok = false
			}
			for owner, path := range stale {
				if strings.Contains(stdout, filepath.Base(path)) != (owner == uid) {
					t.Logf("uid %d %v: names %s of uid %d: %v\n%s", uid, args, filepath.Base(path), owner, owner != uid, stdout)
					ok = false
				}
			}
		}
		for owner, path := range stale {
			if exists(path) == (owner == uid) {
				t.Logf("uid %d's gc: %s of uid %d there: %v", uid, filepath.Base(path), owner, exists(path))
				ok = false
			}
			if runs := history.File(dir, "dead-"+strconv.Itoa(owner)); exists(runs) == (owner == uid) {
				t.Logf("uid %d's gc --history: the history of uid %d there: %v", uid, owner, exists(runs))
				ok = false
			}
		}
		return ok
	}
	t.Run("row", func(t *testing.T) {
		dir, stale, live := setup(t, withlockBin)
		for _, uid := range []int{nobody, other} {
			if !userGC(t, withlockBin, dir, uid, stale) {
				t.Errorf("uid %d's gc in a shared dir touched or failed on other users' leftovers", uid)
			}
			delete(stale, uid)
		}
		liveLock := lockFile(dir, "live")
		p, err := readLock(dir, "live")
		if err != nil || !p.Tree {
			t.Fatalf("live lock: %+v, %v; want one with a tree file", p, err)
		}
		tree := strings.TrimSuffix(liveLock, ".lock") + ".tree." + p.LockID
		if stdout, stderr, code := runWithlock(t, "gc", "--dir", dir, "--older-than", "1d"); code != 0 || !strings.Contains(stdout, filepath.Base(stale[0])) {
			t.Errorf("root's gc: exit %d, %q, %q; want root's leftover removed", code, stdout, stderr)
		}
		for _, f := range []string{liveLock, tree, filepath.Join(dir, locks.Key("live")+".guard"), filepath.Join(dir, locks.Key("live")+".fence")} {
			if !exists(f) {
				t.Errorf("root's gc removed %s of uid 65533's live lock", filepath.Base(f))
			}
		}
		ran := filepath.Join(t.TempDir(), "ran")
		_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, "live", "--"}, ranCmd(ran)...)...)
		oneLine(t, "root beside uid 65533's live lock after gc", code, 75, stderr, ran, "of uid 65533")
		if live.ProcessState != nil {
			t.Errorf("the live holder ended")
		}
	})
	t.Run("negative control", func(t *testing.T) {
		bin := taggedBinary(t, tagBrokenGCOwner)
		dir, stale, _ := setup(t, bin)
		if userGC(t, bin, dir, nobody, stale) {
			t.Errorf("the build that collects any owner's leftovers passed the user's gc check: the row cannot fail")
		}
	})
}

// TestScorecardHostileTreeNameOutsideDir (issue 16): in a shared dir another
// user plants a lock of a dead local holder whose lock_id climbs out of the
// dir ("x/../../../victim", with a directory <key>.tree.x to make the path
// resolve). Root's run reclaims it — and before, probed and removed the
// tree file it named: a root-owned file outside the dir was deleted. Now
// such a lock names no tree file: the victim stays, the run runs.
// Negative control: the same planted lock with a plain lock_id whose tree
// file is in the dir has that file removed by the reclaim, so the row's
// "still there" check sees a removal.
func TestScorecardHostileTreeNameOutsideDir(t *testing.T) {
	needRoot(t)
	self, err := filelock.SelfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	plant := func(t *testing.T, lockID string) (dir string) {
		dir = openDir(t, 0o777|os.ModeSticky)
		now := float64(time.Now().UnixNano()) / 1e9
		p := locks.Payload{RunID: "planted", LockID: lockID, Pid: 1 << 22, CreatedAt: now - 10, ExpiresAt: now + 3600,
			Host: self.Host, BootID: self.BootID, PidNS: self.PidNS, PidStart: 1, Tree: true}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		// What uid 65534 can do there: a lock file and a directory.
		script := `mkdir "$0" && cat > "$1"`
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script,
			strings.TrimSuffix(lockFile(dir, "planted"), ".lock")+".tree.x", lockFile(dir, "planted"))
		cmd.Stdin = strings.NewReader(string(data))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("planting as uid 65534: %v: %s", err, out)
		}
		return dir
	}
	rootRun := func(t *testing.T, dir string) {
		t.Helper()
		ran := filepath.Join(t.TempDir(), "ran")
		_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, "planted", "--"}, ranCmd(ran)...)...)
		assertNoPanic(t, "root's run", stderr)
		if code != 0 || !exists(ran) {
			t.Errorf("root's run on the planted dead holder's lock: exit %d, ran %v: %s", code, exists(ran), stderr)
		}
	}
	t.Run("row", func(t *testing.T) {
		victimDir := openDir(t, 0o755)
		victim := filepath.Join(victimDir, "victim")
		if err := os.WriteFile(victim, []byte("root's\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := plant(t, "")
		// From <dir>/<key>.tree.x up to / and down to the victim.
		climb := strings.Repeat("../", strings.Count(filepath.Clean(dir), "/")+1)
		lockID := "x/" + climb + strings.TrimPrefix(victim, "/")
		// Re-plant with the climbing lock_id now that the dir is known.
		data, _ := os.ReadFile(lockFile(dir, "planted"))
		var p locks.Payload
		json.Unmarshal(data, &p)
		p.LockID = lockID
		data, _ = json.Marshal(p)
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", `cat > "$0"`, lockFile(dir, "planted"))
		cmd.Stdin = strings.NewReader(string(data))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("re-planting: %v: %s", err, out)
		}
		// As the kernel resolves it (filepath.Join would clean it lexically).
		if resolved := strings.TrimSuffix(lockFile(dir, "planted"), ".lock") + ".tree." + lockID; !exists(resolved) {
			t.Fatalf("the planted tree path %s does not reach the victim", resolved)
		}
		rootRun(t, dir)
		if !exists(victim) {
			t.Errorf("root's run removed %s, outside the lock dir, named by another user's lock_id", victim)
		}
	})
	t.Run("negative control", func(t *testing.T) {
		dir := plant(t, "plain")
		tree := strings.TrimSuffix(lockFile(dir, "planted"), ".lock") + ".tree.plain"
		cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "touch", tree)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		rootRun(t, dir)
		if exists(tree) {
			t.Errorf("the reclaim left the dead holder's own tree file %s: the row's check could not see a removal", tree)
		}
	})
}

// TestScorecardHostileSharedDirOrphanedTree (issues 15, 16): in a shared dir
// uid 65534's withlock is killed with -9 while a setsid'd descendant of its
// command runs on. Another user (65533) sees what root sees: the lock held
// ("holder dead, command still running") — 75 and status "held" — because
// the tree file is readable there and the probe needs only that. Before, it
// was 0600: 65533's probe failed, the lock read as "stale (holder dead)"
// and 65533 got 73 about uid 65534's guard.
// Negative control: the no-tree failpoint's lock reads as stale to
// 65533, and the row's check sees it.
func TestScorecardHostileSharedDirOrphanedTree(t *testing.T) {
	needRoot(t)
	const other = 65533
	check := func(t *testing.T, bin string) (ok bool) {
		dir := openDir(t, 0o777|os.ModeSticky)
		work := openDir(t, 0o777)
		started, stop := filepath.Join(work, "started"), filepath.Join(work, "stop")
		script := `setsid sh -c 'touch "$0"; while [ ! -e "$1" ]; do sleep 0.05; done' "$0" "$1" & wait`
		holder := asUser(t, nobody, bin, "run", "--dir", dir, "orph", "--", "sh", "-c", script, started, stop)
		startHolder(t, holder, started)
		t.Cleanup(func() { os.WriteFile(stop, nil, 0o644) })
		_ = holder.Process.Kill()
		waitExit(t, holder, defaultDeadline)

		ok = true
		ran := filepath.Join(work, "ran")
		_, stderr, code := runCommand(t, asUser(t, other, bin, append([]string{"run", "--dir", dir, "orph", "--"}, ranCmd(ran)...)...), defaultDeadline)
		assertNoPanic(t, "uid 65533's run", stderr)
		if code != 75 || exists(ran) || !strings.Contains(stderr, "command still running") {
			t.Logf("uid 65533 beside uid 65534's orphaned tree: exit %d, ran %v: %s", code, exists(ran), stderr)
			ok = false
		}
		stdout, _, _ := runCommand(t, asUser(t, other, bin, "status", "--dir", dir, "orph"), defaultDeadline)
		if !strings.Contains(stdout, "held (holder dead, command still running") {
			t.Logf("uid 65533's status: %q", stdout)
			ok = false
		}
		return ok
	}
	t.Run("row", func(t *testing.T) {
		if !check(t, withlockBin) {
			t.Errorf("another user does not see uid 65534's orphaned tree hold its lock in a shared dir")
		}
	})
	t.Run("negative control", func(t *testing.T) {
		if check(t, taggedBinary(t, tagNoTree)) {
			t.Errorf("the build without tree files passed: the row cannot fail")
		}
	})
}

// TestScorecardHostileSemaphoreSharedDir (issue 17, SPEC §3, §6): --max works
// in the shared dirs flock users know, as a plain run lock does — it was
// refused there ("unsafe lock directory … mode 1777"). uid 65534 fills a
// --max 2 semaphore in a root-owned sticky dir; its third run and root's get
// 75; uid 65533 gets 73 naming the owner (a run id's files in a shared dir
// are its first user's).
// Negative control: the broken-slots failpoint gives each holder a
// slot of its own, and the third run runs beside the two.
func TestScorecardHostileSemaphoreSharedDir(t *testing.T) {
	needRoot(t)
	const other = 65533
	fill := func(t *testing.T, bin string) (dir, ran string, thirdRan bool) {
		dir = openDir(t, 0o777|os.ModeSticky)
		work := openDir(t, 0o777)
		for i := range 2 {
			started := filepath.Join(work, "started"+strconv.Itoa(i))
			h := asUser(t, nobody, bin, append([]string{"run", "--dir", dir, "--max", "2", "sem", "--"}, holderCmd(started)...)...)
			startHolder(t, h, started)
			t.Cleanup(func() { stopHolder(t, h) })
		}
		ran = filepath.Join(work, "ran")
		_, stderr, code := runCommand(t, asUser(t, nobody, bin, append([]string{"run", "--dir", dir, "--max", "2", "sem", "--"}, ranCmd(ran)...)...), defaultDeadline)
		assertNoPanic(t, "third", stderr)
		thirdRan = exists(ran)
		if !thirdRan {
			oneLine(t, "uid 65534's third run of a full --max 2", code, 75, stderr, ran, "sem")
		}
		return dir, ran, thirdRan
	}
	t.Run("row", func(t *testing.T) {
		dir, ran, thirdRan := fill(t, withlockBin)
		if thirdRan {
			t.Fatalf("a third holder ran in a full --max 2 semaphore")
		}
		_, stderr, code := runWithlock(t, append([]string{"run", "--dir", dir, "--max", "2", "sem", "--"}, ranCmd(ran)...)...)
		oneLine(t, "root's run of uid 65534's full semaphore", code, 75, stderr, ran, "sem")
		_, stderr, code = runCommand(t, asUser(t, other, withlockBin, append([]string{"run", "--dir", dir, "--max", "2", "sem", "--"}, ranCmd(ran)...)...), defaultDeadline)
		oneLine(t, "uid 65533's run of uid 65534's semaphore", code, 73, stderr, ran, "belongs to uid 65534")
	})
	t.Run("negative control", func(t *testing.T) {
		const tag = failpoint.BrokenSlots
		if _, _, thirdRan := fill(t, taggedBinary(t, tag)); !thirdRan {
			t.Errorf("the broken-slots build kept the third run out: the row cannot fail")
		}
	})
}

// contendBeside runs `withlock run runID` under each contender's command
// prefix (nil: straight from the host) while runID has a live holder, and
// counts the contenders whose command ran beside it; one that did not run
// must have exited 75.
func contendBeside(t *testing.T, bin, dir, runID string, contenders map[string][]string) (doubles int) {
	t.Helper()
	for name, prefix := range contenders {
		ran := filepath.Join(t.TempDir(), "ran")
		argv := append(append(slices.Clip(prefix), bin, "run", "--dir", dir, runID, "--"), ranCmd(ran)...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = testEnv(t)
		_, stderr, code := runCommand(t, cmd, defaultDeadline)
		assertNoPanic(t, name, stderr)
		if exists(ran) {
			doubles++
			t.Logf("%s: ran beside the live holder (exit %d)", name, code)
		} else if code != 75 {
			t.Errorf("%s: exit %d, want 75\n%s", name, code, stderr)
		}
	}
	return doubles
}
