package scope

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// FuzzParseScope: whatever the text, ParseSpec returns a normalised scope
// or an ErrUsage error; a parsed scope prints to text that parses back
// to itself. Seed corpus: testdata/fuzz/FuzzParseScope.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"/project/src:write:recursive", "/a/../b/:read", "/a:b:write", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSpec(text)
		if err != nil {
			return
		}
		if !strings.HasPrefix(s.Path, "/") || filepath.Clean(s.Path) != s.Path {
			t.Fatalf("ParseSpec(%q) path %q is not absolute and clean", text, s.Path)
		}
		if s.Mode != Read && s.Mode != Write {
			t.Fatalf("ParseSpec(%q) mode %v", text, s.Mode)
		}
		again, err := ParseSpec(s.String())
		if err != nil || again != s {
			t.Fatalf("ParseSpec(%q) = %+v prints %q which parses to %+v, %v", text, s, s.String(), again, err)
		}
		if !overlaps(s, s) || !NewSet(s).Contains(s.Path) {
			t.Fatalf("%s does not cover its own path", s)
		}
	})
}

// FuzzDecodeScopeRegistry: decoding never panics; what it accepts
// encodes to a registry that decodes to the same bytes again, and the
// tree rules (reclaim, status) hold on it: every allocation shows once in
// the tree, no delegated_from dangles after a reclaim, and every
// scope_deny is the union of the children's scope_allow. Seed corpus:
// testdata/fuzz/FuzzDecodeScopeRegistry.
func FuzzDecodeScopeRegistry(f *testing.F) {
	f.Add([]byte(seedRegistry))
	f.Add([]byte(`{"allocations":[{"name":"a","pid":1,"delegated_from":"a"}]}`))
	for _, s := range codecCases {
		f.Add([]byte(s))
	}
	f.Add(benchTable(3).Encode()) // what withlock writes
	f.Fuzz(func(t *testing.T, data []byte) {
		codecPathsAgree(t, data)
		reg, err := roundTrip(t, data)
		if err != nil {
			return
		}
		codecPathsAgree(t, reg.Encode())
		again, _ := DecodeTable(reg.Encode())
		if n := countNodes(reg.Tree(func(int, uint64) bool { return true })); n != len(reg.Allocations) {
			t.Fatalf("tree shows %d of %d allocations", n, len(reg.Allocations))
		}
		oddPIDsDead := func(pid int, _ uint64) bool { return pid%2 == 0 }
		removed := again.remove(func(a *Allocation) bool { return !oddPIDsDead(a.PID, a.PIDStart) })
		checkTreeInvariants(t, again, removed)
	})
}

func countNodes(nodes []Node) int {
	n := len(nodes)
	for _, c := range nodes {
		n += countNodes(c.Children)
	}
	return n
}

// checkTreeInvariants: no allocation is delegated from one that was
// removed (a parent never in the registry may stay named: its holder puts
// it back), and denies are the children's allows.
func checkTreeInvariants(t *testing.T, reg *Table, removed []Allocation) {
	t.Helper()
	for _, a := range reg.Allocations {
		for _, r := range removed {
			if a.DelegatedFrom == r.Name && reg.find(r.Name) == nil {
				t.Fatalf("%s still delegated from removed %q", a.Name, r.Name)
			}
		}
	}
	for i := range reg.Allocations {
		p := &reg.Allocations[i]
		if reg.find(p.Name) != p {
			continue // a foreign duplicate name: children belong to the first
		}
		var want []string
		for _, c := range reg.Allocations {
			if c.DelegatedFrom == p.Name {
				for _, s := range c.ScopeAllow {
					if !slices.Contains(want, s) {
						want = append(want, s)
					}
				}
			}
		}
		if !slices.Equal(p.ScopeDeny, want) && !(len(want) == 0 && len(p.ScopeDeny) == 0) {
			t.Fatalf("%s deny %v, children allow %v", p.Name, p.ScopeDeny, want)
		}
	}
}

// FuzzNeverTwoWriters: whatever bytes the registry file holds (and its
// backup, when there is one), two writers asking for overlapping paths are
// never both admitted; neither is admitted over an allocation that was live
// in what the file held; and a registry that can be neither read nor
// provably restored admits no one. Holders with an even pid count as alive.
func FuzzNeverTwoWriters(f *testing.F) {
	live := `{"allocations":[{"name":"h","pid":2,"scope_allow":["/fz/p:write:recursive"]}]}`
	f.Add([]byte(seedRegistry), []byte(nil), false)
	f.Add([]byte(live), []byte(nil), false)
	f.Add([]byte(live[:len(live)/2]), []byte(live), true)
	f.Add([]byte(nil), []byte(live), true)
	f.Add([]byte(nil), []byte(nil), false)
	f.Add([]byte("\x00"), []byte(`{}`), true)         // a backup it is no prefix of
	f.Add([]byte(`{"alloc`), []byte(`{"x":1}`), true) // a prefix of a backup that parses
	f.Add([]byte(`{"allocations":[{"name":"h","pid":3,"scope_allow":["/fz:write:recursive"]},{"name":"k","pid":4,"scope_allow":["/fz/p/q:write"],"delegated_from":"h"}]}`), []byte(nil), false)
	f.Fuzz(func(t *testing.T, data, bak []byte, withBak bool) {
		if len(data) > 1<<16 || len(bak) > 1<<16 {
			return
		}
		dir := filepath.Join(t.TempDir(), "withlock")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		reg := &Registry{Path: filepath.Join(dir, "scope.lock"), Alive: evenPIDsAlive, Log: zerolog.Nop()}
		if err := os.WriteFile(reg.Path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if withBak {
			if err := os.WriteFile(reg.backupPath(), bak, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		before, readable := expectedTable(data, bak, withBak)

		ctx := context.Background()
		first := Request{Name: "fuzz-w1", PID: 2, Allow: mustSpecs([]string{"/fz/p:write:recursive"})}
		second := Request{Name: "fuzz-w2", PID: 4, Allow: mustSpecs([]string{"/fz/p/q:write"})}
		_, err1 := reg.Register(ctx, first)
		_, err2 := reg.Register(ctx, second)
		switch {
		case err1 == nil && err2 == nil:
			t.Fatalf("two writers admitted over /fz/p/q\nregistry %q\nbackup %q (%v)", data, bak, withBak)
		case !readable && (err1 == nil || err2 == nil):
			t.Fatalf("a registry that cannot be read admitted a writer: %v, %v\nregistry %q", err1, err2, data)
		case readable && err1 == nil && heldByLive(before, first):
			t.Fatalf("the first writer was admitted over a live allocation\nregistry %q", data)
		case readable && err2 == nil && heldByLive(before, second):
			t.Fatalf("the second writer was admitted over a live allocation\nregistry %q", data)
		}
		for _, err := range []error{err1, err2} {
			if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrUsage) && !errors.Is(err, ErrUnusable) {
				t.Fatalf("an error of no documented kind: %v", err)
			}
		}
	})
}

func evenPIDsAlive(pid int, _ uint64) bool { return pid > 0 && pid%2 == 0 }

// expectedTable is what the registry holds as far as the rules go: the
// file when it parses, the backup when the file is a torn prefix of it (the
// backup was just written, within the restore window), an empty table for
// an empty file never written; readable is false otherwise.
func expectedTable(data, bak []byte, withBak bool) (*Table, bool) {
	if len(data) > 0 {
		if t, err := DecodeTable(data); err == nil {
			return t, true
		}
	}
	if withBak {
		t, err := DecodeTable(bak)
		if err == nil && bytes.HasPrefix(bak, data) {
			return t, true
		}
		return nil, false
	}
	if len(data) == 0 {
		return &Table{}, true
	}
	return nil, false
}

// heldByLive reports whether a live allocation of before (after the stale
// ones are reclaimed) effectively writes where q asks to.
func heldByLive(before *Table, q Request) bool {
	t := &Table{Allocations: slices.Clone(before.Allocations)}
	t.remove(func(a *Allocation) bool { return !evenPIDsAlive(a.PID, a.PIDStart) })
	want := NewSet(writeSpecs(q.Allow)...)
	for _, a := range t.Allocations {
		if a.Name != q.Name && want.Intersects(a.Effective()) {
			return true
		}
	}
	return false
}
