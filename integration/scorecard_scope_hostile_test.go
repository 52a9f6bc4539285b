package integration

// Scorecard rows "scope registry, hostile": each double-holder case of
// issue 16 for `withlock scope`, tried black-box with real processes — the
// registry torn or emptied by another writer that holds the flock as the
// seed's protocol asks, a scope path through a symlink and "..", and an
// allocation removed from the registry by hand. Each row has a negative
// control: the same check, run where the protection cannot act, sees the
// second writer admitted — the row's check can fail.

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scopeHolder starts `withlock scope --name NAME --allow ALLOW` whose child
// touches a file and sleeps; it returns once the child runs.
func scopeHolder(t *testing.T, reg, name, allow string, extra ...string) *execProc {
	t.Helper()
	started := filepath.Join(t.TempDir(), name+".started")
	args := append([]string{"scope", "--scope-file", reg, "--name", name, "--allow", allow}, extra...)
	args = append(args, "--", "sh", "-c", `touch "$0"; exec sleep 60`, started)
	p := startProc(binary(t), testEnv(t), args...)
	t.Cleanup(func() { stopProc(p) })
	if !waitForFile(started, 20*time.Second, p.ended) {
		o, _ := p.wait(time.Second)
		t.Fatalf("holder %s never started its child: exit %d\nstderr: %s", name, o.code, o.stderr)
	}
	return p
}

// tryWriter is a second writer's attempt: `withlock scope --allow ALLOW --
// true`, to completion.
func tryWriter(t *testing.T, reg, allow string) outcome {
	t.Helper()
	o, err := execWithlock(binary(t), testEnv(t), 30*time.Second, "scope", "--scope-file", reg, "--allow", allow, "--", "true")
	if err != nil {
		t.Fatal(err)
	}
	assertNoPanic(t, "second writer", o.stderr)
	return o
}

// foreignRewrite rewrites the registry in place the way another program
// following the seed's protocol does: flock(LOCK_EX), truncate, write (here
// content of the test's choosing: torn, or nothing), unlock.
func foreignRewrite(t *testing.T, reg string, content func(old []byte) []byte) {
	t.Helper()
	f, err := os.OpenFile(reg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(content(old), 0); err != nil {
		t.Fatal(err)
	}
}

// registryNames reports whether the registry on disk names name.
func registryHolds(reg, name string) bool {
	data, err := os.ReadFile(reg)
	return err == nil && bytes.Contains(data, []byte(`"name":"`+name+`"`))
}

// TestScorecardScopeTornRegistry: a live writer holds /w; another program
// tears or empties the registry while holding its flock. A second writer of
// /w is never admitted: exit 73 naming the registry and `break --scopes`. After
// the reset the live holder puts its allocation back by itself, and the
// second writer gets a conflict naming it.
func TestScorecardScopeTornRegistry(t *testing.T) {
	for _, tear := range []struct {
		name    string
		content func(old []byte) []byte
	}{
		{"torn", func(old []byte) []byte { return old[:len(old)/2] }},
		{"emptied", func([]byte) []byte { return nil }},
	} {
		t.Run(tear.name, func(t *testing.T) {
			reg := filepath.Join(t.TempDir(), "scopes", "scope.lock")
			w := filepath.Join(t.TempDir(), "w")
			holder := scopeHolder(t, reg, "first", w+":write:recursive")
			foreignRewrite(t, reg, tear.content)
			damaged, _ := os.ReadFile(reg)

			o := tryWriter(t, reg, w+":write")
			if o.code == 0 {
				t.Fatalf("a second writer was admitted over a live holder after the registry was %s", tear.name)
			}
			if o.code != 73 || !strings.Contains(o.stderr, reg) || !strings.Contains(o.stderr, "break --scopes") {
				t.Fatalf("second writer: exit %d, want 73 naming %s and `break --scopes`\nstderr: %s", o.code, reg, o.stderr)
			}
			if now, _ := os.ReadFile(reg); !bytes.Equal(now, damaged) {
				t.Fatalf("the damaged registry was rewritten: %q", now)
			}
			if _, stderr, code := runWithlock(t, "break", "--scopes", "--scope-file", reg); code != 0 {
				t.Fatalf("break --scopes: exit %d\nstderr: %s", code, stderr)
			}
			waitFor(t, 15*time.Second, func() bool { return registryHolds(reg, "first") }, "the live holder to put its allocation back")
			if o := tryWriter(t, reg, w+":write"); o.code != 75 || !strings.Contains(o.stderr, "held by first") {
				t.Fatalf("after reset: exit %d, want 75 naming first\nstderr: %s", o.code, o.stderr)
			}
			if holder.ended() {
				o, _ := holder.wait(time.Second)
				t.Fatalf("the holder ended: exit %d\nstderr: %s", o.code, o.stderr)
			}
		})
	}
}

// TestScorecardScopeNegativeControlReplacedRegistry: the same live holder,
// stopped (SIGSTOP) so it cannot put its allocation back, and its registry
// replaced by a new empty file — which is rightly a new registry. The
// second writer is admitted: the torn row's check sees it when it happens.
func TestScorecardScopeNegativeControlReplacedRegistry(t *testing.T) {
	reg := filepath.Join(t.TempDir(), "scopes", "scope.lock")
	w := filepath.Join(t.TempDir(), "w")
	holder := scopeHolder(t, reg, "first", w+":write:recursive")
	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer holder.cmd.Process.Signal(syscall.SIGCONT)
	if err := os.Remove(reg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if o := tryWriter(t, reg, w+":write"); o.code != 0 {
		t.Fatalf("negative control: the second writer was refused (exit %d) though nothing records the first\nstderr: %s", o.code, o.stderr)
	}
}

// TestScorecardScopeSymlinkDotDot: a live writer holds DIR/b/x; a second
// writer asks for DIR/a/lnk/../x, where lnk is a symlink to DIR/b/c, so the
// kernel reaches DIR/b/x. It is refused (75) naming the holder. The negative
// control asks for DIR/a/x — what cleaning "lnk/.." away would have judged —
// a different directory, which is admitted: the row's check can fail.
func TestScorecardScopeSymlinkDotDot(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"a", "b/c", "b/x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "b", "c"), filepath.Join(root, "a", "lnk")); err != nil {
		t.Fatal(err)
	}
	reg := filepath.Join(t.TempDir(), "scopes", "scope.lock")
	scopeHolder(t, reg, "first", filepath.Join(root, "b", "x")+":write")

	o := tryWriter(t, reg, root+"/a/lnk/../x:write")
	if o.code != 75 || !strings.Contains(o.stderr, "held by first") {
		t.Fatalf("a/lnk/../x while b/x is held: exit %d, want 75 naming first\nstderr: %s", o.code, o.stderr)
	}
	// The same the other way round: held through the symlink, asked
	// directly.
	reg2 := filepath.Join(t.TempDir(), "scopes", "scope.lock")
	scopeHolder(t, reg2, "second", root+"/a/lnk/../x:write")
	if o := tryWriter(t, reg2, filepath.Join(root, "b", "x")+":write"); o.code != 75 || !strings.Contains(o.stderr, "held by second") {
		t.Fatalf("b/x while a/lnk/../x is held: exit %d, want 75 naming second\nstderr: %s", o.code, o.stderr)
	}

	t.Run("negative control", func(t *testing.T) {
		if o := tryWriter(t, reg, filepath.Join(root, "a", "x")+":write"); o.code != 0 {
			t.Fatalf("a/x is another directory than b/x, yet exit %d\nstderr: %s", o.code, o.stderr)
		}
	})
}

// TestScorecardScopeAllocationRemovedByHand: an operator (or another
// program) removes a live holder's allocation from the registry. Within 5 s
// the holder puts it back, and a second writer gets a conflict naming it.
// When the holder cannot put it back — it was stopped while a second writer
// took the scope — its scope is lost: its child is killed and it exits 76.
// The negative control is --on-lock-lost warn: the child runs on and its own
// status is passed through, so the row's 76 is withlock's doing.
func TestScorecardScopeAllocationRemovedByHand(t *testing.T) {
	removeFirst := func(old []byte) []byte {
		var kept []string
		for _, line := range strings.Split(string(old), "\n") {
			if !strings.Contains(line, `"name":"first"`) {
				kept = append(kept, line)
			}
		}
		out := strings.Join(kept, "\n")
		out = strings.Replace(out, "},\n]", "}\n]", 1) // the last allocation's comma
		return []byte(strings.Replace(out, "[\n]", "[]", 1))
	}
	t.Run("put back", func(t *testing.T) {
		reg := filepath.Join(t.TempDir(), "scopes", "scope.lock")
		w := filepath.Join(t.TempDir(), "w")
		holder := scopeHolder(t, reg, "first", w+":write:recursive")
		foreignRewrite(t, reg, removeFirst)
		if registryHolds(reg, "first") {
			t.Fatal("the allocation was not removed")
		}
		removed := time.Now()
		waitFor(t, 10*time.Second, func() bool { return registryHolds(reg, "first") }, "the holder to put its allocation back")
		t.Logf("put back %v after the removal", time.Since(removed).Round(time.Millisecond))
		if o := tryWriter(t, reg, w+":write"); o.code != 75 || !strings.Contains(o.stderr, "held by first") {
			t.Fatalf("after the removal: exit %d, want 75 naming first\nstderr: %s", o.code, o.stderr)
		}
		if holder.ended() {
			t.Fatal("the holder ended")
		}
	})
	// lost stops the holder, removes its allocation, lets a second writer
	// take the scope and resumes the holder, which then finds its
	// allocation gone and cannot put it back.
	lost := func(t *testing.T, policy string) (holder *execProc) {
		reg := filepath.Join(t.TempDir(), "scopes", "scope.lock")
		w := filepath.Join(t.TempDir(), "w")
		holder = scopeHolder(t, reg, "first", w+":write:recursive", "--on-lock-lost", policy)
		if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		foreignRewrite(t, reg, removeFirst)
		second := scopeHolder(t, reg, "second", w+":write")
		if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, func() bool {
			_, stderr := holder.outputSoFar()
			return holder.ended() || strings.Contains(stderr, "scope allocation lost")
		}, "the holder to find its scope lost")
		if second.ended() {
			t.Fatal("the second writer ended")
		}
		return holder
	}
	t.Run("lost", func(t *testing.T) {
		o, err := lost(t, "kill").wait(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if o.code != 76 || !strings.Contains(o.stderr, "scope allocation lost") {
			t.Fatalf("holder whose scope was taken: exit %d, want 76 saying the scope was lost\nstderr: %s", o.code, o.stderr)
		}
	})
	t.Run("negative control", func(t *testing.T) {
		holder := lost(t, "warn")
		// With warn the child runs on: the holder has not exited 76.
		if holder.ended() {
			o, _ := holder.wait(time.Second)
			t.Fatalf("--on-lock-lost warn: the holder ended (exit %d)\nstderr: %s", o.code, o.stderr)
		}
	})
}
