package integration

// Scorecard row "hostile paths": a symlink (to a victim file), a FIFO or a
// directory planted where withlock keeps its files. Nothing may follow the
// symlink, block on the FIFO or hang; the victim stays untouched; the run
// ends with a clear error and exit 73 — or, where the planted object is
// harmless to withlock, succeeds without touching it.
//
// The temp file (<lock>.tmp.<lock_id>) cannot be planted: its name carries
// the acquisition's random lock id. It is created with O_EXCL|O_NOFOLLOW, so
// a planted file there would make that one attempt fail; the fence file and
// the guard, whose names are predictable, are planted instead.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

// plantKinds are the hostile objects.
var plantKinds = []string{"symlink", "fifo", "dir"}

// plant creates a hostile object of kind at path; a symlink points at victim.
func plant(t *testing.T, kind, path, victim string) {
	t.Helper()
	var err error
	switch kind {
	case "symlink":
		err = os.Symlink(victim, path)
	case "fifo":
		err = syscall.Mkfifo(path, 0o600)
	case "dir":
		err = os.Mkdir(path, 0o700)
	}
	if err != nil {
		t.Fatalf("plant %s at %s: %v", kind, path, err)
	}
}

// unchanged checks that the planted object is still what was planted and
// that the victim file is intact.
func unchanged(t *testing.T, kind, path, victim string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("planted %s at %s: %v", kind, path, err)
		return
	}
	ok := map[string]bool{
		"symlink": fi.Mode()&os.ModeSymlink != 0,
		"fifo":    fi.Mode()&os.ModeNamedPipe != 0,
		"dir":     fi.IsDir(),
	}[kind]
	if !ok {
		t.Errorf("planted %s at %s is now %v", kind, path, fi.Mode())
	}
	data, err := os.ReadFile(victim)
	if err != nil || string(data) != victimContent {
		t.Errorf("victim file %s: %q, %v; want %q untouched", victim, data, err, victimContent)
	}
	if vi, err := os.Lstat(victim); err == nil && vi.Mode().Perm() != 0o644 {
		t.Errorf("victim file mode changed to %v", vi.Mode())
	}
}

const victimContent = "precious data\n"

func newVictim(t *testing.T) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte(victimContent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(victim, 0o644); err != nil {
		t.Fatal(err)
	}
	return victim
}

func TestScorecardHostilePaths(t *testing.T) {
	const runID = "hostile"
	key := locks.Key(runID)
	targets := []struct {
		name   string
		suffix string
		// mayWork: withlock may run the child (exit 0) instead of refusing
		mayWork map[string]bool
	}{
		{name: "lock", suffix: ".lock"},
		{name: "fence", suffix: ".fence"},
		// A FIFO at the guard is opened O_RDWR (which never blocks) and only
		// flocked, never read or written: harmless, so a run may go ahead.
		{name: "guard", suffix: ".guard", mayWork: map[string]bool{"fifo": true}},
	}
	for _, target := range targets {
		for _, kind := range plantKinds {
			t.Run(target.name+"_"+kind, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "locks")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				victim := newVictim(t)
				path := filepath.Join(dir, key+target.suffix)
				plant(t, kind, path, victim)
				o, err := execWithlock(binary(t), testEnv(t), 20*time.Second, "run", "--dir", dir, runID, "--", "true")
				if err != nil {
					t.Fatal(err) // includes a hang
				}
				unchanged(t, kind, path, victim)
				assertNoPanic(t, target.name+" "+kind, o.stderr)
				switch {
				case o.code == 73:
					if !strings.Contains(o.stderr, filepath.Base(path)) {
						t.Errorf("exit 73 without naming %s:\n%s", filepath.Base(path), o.stderr)
					}
				case o.code == 0 && target.mayWork[kind]:
					t.Logf("a %s at the %s is harmless: the run went ahead (victim untouched)", kind, target.name)
				default:
					t.Errorf("%s planted at the %s: exit %d, want 73 (clear error)\nstderr: %s", kind, target.name, o.code, o.stderr)
				}
			})
		}
	}
}

// TestScorecardHostileStaleNames: objects planted at every .stale.<ts> name
// a reclaim in the next seconds could pick. The reclaim must never rename
// over them (nor follow them): it picks a free suffix, and the run goes on.
func TestScorecardHostileStaleNames(t *testing.T) {
	const runID = "hostile-stale"
	for _, kind := range plantKinds {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			plantLock(t, dir, runID, expiredPayload(runID))
			victim := newVictim(t)
			now := time.Now().Unix()
			var planted []string
			for ts := now - 1; ts <= now+5; ts++ {
				path := fmt.Sprintf("%s.stale.%d", lockFile(dir, runID), ts)
				plant(t, kind, path, victim)
				planted = append(planted, path)
			}
			o, err := execWithlock(binary(t), testEnv(t), 20*time.Second, "run", "--dir", dir, runID, "--", "true")
			if err != nil {
				t.Fatal(err)
			}
			if o.code != 0 {
				t.Errorf("stale lock with %ss at its .stale.* names: exit %d, want 0 (reclaimed under a free suffix)\nstderr: %s", kind, o.code, o.stderr)
			}
			assertNoPanic(t, kind, o.stderr)
			for _, path := range planted {
				unchanged(t, kind, path, victim)
			}
			if n := len(staleFiles(t, dir, runID)); n != len(planted)+1 {
				t.Errorf("%d .stale.* entries, want the %d planted + the reclaimed lock", n, len(planted))
			}
		})
	}
}

// TestScorecardHostileLockDir: a lock directory that is a symlink or
// world-writable is refused with 73 and a message saying why.
func TestScorecardHostileLockDir(t *testing.T) {
	work := t.TempDir()
	real := filepath.Join(work, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(work, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(work, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, why string }{{link, "symlink"}, {open, "writable by group and others"}} {
		_, stderr, code := runWithlock(t, "run", "--dir", c.dir, "x", "--", "true")
		if code != 73 || !strings.Contains(stderr, c.why) {
			t.Errorf("--dir %s (%s): exit %d, stderr %q; want 73 saying %q", c.dir, c.why, code, stderr, c.why)
		}
		assertNoPanic(t, c.why, stderr)
	}
	if entries, _ := os.ReadDir(real); len(entries) != 0 {
		t.Errorf("withlock wrote through the symlinked dir: %v", entries)
	}
}

// TestScorecardHostileRegistry: a symlink, FIFO or directory planted at the
// scope registry path: refused with 73 naming the path, victim untouched,
// nothing hangs.
func TestScorecardHostileRegistry(t *testing.T) {
	for _, kind := range plantKinds {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "scopes")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			victim := newVictim(t)
			reg := filepath.Join(dir, "scope.lock")
			plant(t, kind, reg, victim)
			o, err := execWithlock(binary(t), testEnv(t), 20*time.Second, "scope", "--scope-file", reg, "--allow", "/tmp/scorecard:write", "--", "true")
			if err != nil {
				t.Fatal(err)
			}
			unchanged(t, kind, reg, victim)
			assertNoPanic(t, kind, o.stderr)
			if o.code != 73 || !strings.Contains(o.stderr, reg) {
				t.Errorf("%s at the registry: exit %d, want 73 naming %s\nstderr: %s", kind, o.code, reg, o.stderr)
			}
		})
	}
}
