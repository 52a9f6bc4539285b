package integration

// Scorecard row "bad input": garbage in lock files and in the scope
// registry, and absurd flags. Every case ends with a documented exit status
// and a clear message, never a panic.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// badLockContents are lock files withlock must not parse as a holder.
var badLockContents = map[string][]byte{
	"empty":           {},
	"huge":            append([]byte(`{"lock_id":"x","expires_at":4e9,"pad":"`), append(bytes.Repeat([]byte("a"), 70<<10), `"}`...)...),
	"binary":          {0x00, 0xff, 0xfe, 0x7f, 0x1b, '{', 0x00},
	"wrong types":     []byte(`{"run_id":1,"lock_id":[],"pid":"x","created_at":"now","expires_at":"soon"}`),
	"json null":       []byte(`null`),
	"json array":      []byte(`[{"lock_id":"x","expires_at":4e9}]`),
	"truncated":       []byte(`{"run_id":"bad","lock_id":"abc","pid":12,"expi`),
	"no lock_id":      []byte(`{"run_id":"bad","pid":12,"created_at":1,"expires_at":4e9}`),
	"negative expiry": []byte(`{"run_id":"bad","lock_id":"abc","pid":12,"created_at":1,"expires_at":-5}`),
}

// TestScorecardBadLockFiles: an unparseable lock file counts as held while
// it is fresh (a foreign writer may be between create and write: exit 75,
// naming an unreadable file) and as stale once older than 2 s (reclaimed:
// the run goes ahead).
func TestScorecardBadLockFiles(t *testing.T) {
	const runID = "bad"
	for name, content := range badLockContents {
		t.Run(name, func(t *testing.T) {
			for _, age := range []string{"fresh", "old"} {
				dir := filepath.Join(t.TempDir(), "locks")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				path := lockFile(dir, runID)
				if err := os.WriteFile(path, content, 0o600); err != nil {
					t.Fatal(err)
				}
				// "fresh" is dated 30 s ahead: on a loaded machine the run can
				// take longer than the 2 s grace to judge a file written just
				// now, which would make it "old".
				want, mtime := 75, time.Now().Add(30*time.Second)
				if age == "old" {
					want, mtime = 0, time.Now().Add(-time.Minute)
				}
				if err := os.Chtimes(path, mtime, mtime); err != nil {
					t.Fatal(err)
				}
				_, stderr, code := runWithlock(t, "run", "--dir", dir, runID, "--", "true")
				assertNoPanic(t, name+" "+age, stderr)
				if code != want {
					t.Errorf("%s lock file (%s): exit %d, want %d\nstderr: %s", name, age, code, want, stderr)
				}
				if want == 75 && !strings.Contains(stderr, "unreadable") {
					t.Errorf("%s lock file (fresh): conflict line does not say the file is unreadable: %q", name, stderr)
				}
				if want == 0 && len(staleFiles(t, dir, runID)) != 1 {
					t.Errorf("%s lock file (old): not moved aside to .stale.*", name)
				}
			}
		})
	}
}

// TestScorecardAbsurdExpiry: a well-formed lock from another host whose
// expires_at lies absurdly far ahead is held (only its TTL can free it):
// the expiry must not overflow into the past.
func TestScorecardAbsurdExpiry(t *testing.T) {
	const runID = "far-future"
	for _, expiry := range []string{"9e9", "1e12", "1e18", "1e300"} {
		dir := filepath.Join(t.TempDir(), "locks")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		content := `{"run_id":"far-future","lock_id":"abc","pid":4242,"created_at":1700000000,"expires_at":` + expiry + `,"host":"elsewhere.invalid"}`
		if err := os.WriteFile(lockFile(dir, runID), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := runWithlock(t, "run", "--dir", dir, runID, "--", "true")
		assertNoPanic(t, "expires_at "+expiry, stderr)
		if code != 75 {
			t.Errorf("foreign lock with expires_at %s: exit %d, want 75 (held until it expires)\nstderr: %s", expiry, code, stderr)
		}
	}
}

// TestScorecardAbsurdFlags: bad flags and environment exit 64 with one
// line saying what is wrong.
func TestScorecardAbsurdFlags(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		args []string
		env  []string
	}{
		{"negative wait", []string{"run", "--dir", dir, "--wait", "-1s", "x", "--", "true"}, nil},
		{"garbage wait", []string{"run", "--dir", dir, "--wait", "soon", "x", "--", "true"}, nil},
		{"negative grace", []string{"run", "--dir", dir, "--grace", "-1s", "x", "--", "true"}, nil},
		{"negative timeout", []string{"run", "--dir", dir, "--timeout", "-1s", "x", "--", "true"}, nil},
		{"negative ttl", []string{"run", "--dir", dir, "--ttl", "-1s", "x", "--", "true"}, nil},
		{"ttl 0", []string{"run", "--dir", dir, "--ttl", "0", "x", "--", "true"}, nil},
		{"ttl 0s", []string{"run", "--dir", dir, "--ttl", "0s", "x", "--", "true"}, nil},
		{"WITHLOCK_TTL=0", []string{"run", "--dir", dir, "x", "--", "true"}, []string{"WITHLOCK_TTL=0"}},
		{"WITHLOCK_TTL=-5", []string{"run", "--dir", dir, "x", "--", "true"}, []string{"WITHLOCK_TTL=-5"}},
		{"NEXUSCORE_RUN_LOCK_TTL_SECONDS=abc", []string{"run", "--dir", dir, "x", "--", "true"}, []string{"NEXUSCORE_RUN_LOCK_TTL_SECONDS=abc"}},
		{"empty run id", []string{"run", "--dir", dir, "", "--", "true"}, nil},
		{"no run id", []string{"run", "--dir", dir, "--", "true"}, nil},
		{"no command", []string{"run", "--dir", dir, "x"}, nil},
		{"conflict exit code 256", []string{"run", "--dir", dir, "--conflict-exit-code", "256", "x", "--", "true"}, nil},
		{"conflict exit code -1", []string{"run", "--dir", dir, "--conflict-exit-code", "-1", "x", "--", "true"}, nil},
		{"on-lock-lost bogus", []string{"run", "--dir", dir, "--on-lock-lost", "ignore", "x", "--", "true"}, nil},
		{"log-format bogus", []string{"run", "--dir", dir, "--log-format", "xml", "x", "--", "true"}, nil},
		{"unknown flag", []string{"run", "--dir", dir, "--frobnicate", "x", "--", "true"}, nil},
		{"scope without mode", []string{"scope", "--scope-file", filepath.Join(dir, "scope.lock"), "--allow", "/tmp/x", "--", "true"}, nil},
		{"scope bad mode", []string{"scope", "--scope-file", filepath.Join(dir, "scope.lock"), "--allow", "/tmp/x:admin", "--", "true"}, nil},
		{"scope relative path, bad mode", []string{"scope", "--scope-file", filepath.Join(dir, "scope.lock"), "--allow", "tmp/x:rw", "--", "true"}, nil},
		{"scope empty", []string{"scope", "--scope-file", filepath.Join(dir, "scope.lock"), "--allow", "", "--", "true"}, nil},
		{"scope no allow", []string{"scope", "--scope-file", filepath.Join(dir, "scope.lock"), "--", "true"}, nil},
	}
	for _, c := range cases {
		cmd := withlockCommand(t, c.args...)
		cmd.Env = append(cmd.Env, c.env...)
		stdout, stderr, code := runCommand(t, cmd, defaultDeadline)
		assertNoPanic(t, c.name, stderr)
		switch {
		case code != 64:
			t.Errorf("%s: exit %d, want 64 (usage)\nstdout: %q\nstderr: %q", c.name, code, stdout, stderr)
		case !strings.HasPrefix(stderr, "withlock: ") || strings.Count(strings.TrimSpace(stderr), "\n") > 0:
			t.Errorf("%s: stderr %q, want one line starting \"withlock: \"", c.name, stderr)
		}
	}
}

// badRegistries are scope registry contents that are not the seed's format.
var badRegistries = map[string][]byte{
	"binary":            {0x00, 0xff, 0xfe, 0x7f, 0x1b, '{'},
	"wrong-typed list":  []byte(`{"allocations":"x"}`),
	"wrong-typed entry": []byte(`{"allocations":[{"name":5,"pid":"x"}]}`),
	"json array":        []byte(`[1,2]`),
	"json null":         []byte(`null`),
	"truncated":         []byte(`{"allocations":[{"name":"a","pid":1,"scope_allow":["/x:write"]`),
	"huge":              append(append([]byte(`{"allocations":[],"pad":"`), bytes.Repeat([]byte("a"), 1<<20)...), '"'),
}

// TestScorecardBadRegistry: a corrupt scope registry with no good backup
// is never accepted (nor emptied): exit 73 naming the file and the way out
// (`withlock break --scopes`), and the file is left as it was. An empty file
// is a new registry. After `break --scopes` the next scope succeeds.
func TestScorecardBadRegistry(t *testing.T) {
	for name, content := range badRegistries {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "scopes")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			reg := filepath.Join(dir, "scope.lock")
			if err := os.WriteFile(reg, content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := runWithlock(t, "scope", "--scope-file", reg, "--allow", "/tmp/scorecard:write", "--", "true")
			assertNoPanic(t, name, stderr)
			if code != 73 || !strings.Contains(stderr, reg) || !strings.Contains(stderr, "break --scopes") {
				t.Errorf("%s registry: exit %d, stderr %q; want 73 naming %s and `break --scopes`", name, code, stderr, reg)
			}
			if data, _ := os.ReadFile(reg); !bytes.Equal(data, content) {
				t.Errorf("%s registry: the corrupt file was changed (now %d bytes)", name, len(data))
			}
			if _, stderr, code := runWithlock(t, "break", "--scopes", "--scope-file", reg); code != 0 {
				t.Fatalf("break --scopes: exit %d\nstderr: %s", code, stderr)
			}
			if _, stderr, code := runWithlock(t, "scope", "--scope-file", reg, "--allow", "/tmp/scorecard:write", "--", "true"); code != 0 {
				t.Errorf("after break --scopes: exit %d, want 0\nstderr: %s", code, stderr)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		reg := filepath.Join(t.TempDir(), "scope.lock")
		if err := os.WriteFile(reg, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, stderr, code := runWithlock(t, "scope", "--scope-file", reg, "--allow", "/tmp/scorecard:write", "--", "true"); code != 0 {
			t.Errorf("empty registry: exit %d, want 0 (a new registry)\nstderr: %s", code, stderr)
		}
	})
}
