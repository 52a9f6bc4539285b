package scope

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
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

// FuzzDecodeScopeRegistry: the decoder never panics; what it accepts
// encodes to a registry that decodes to the same bytes again, and the
// tree rules (reclaim, status) hold on it: every allocation shows once in
// the tree, no delegated_from dangles after a reclaim, and every
// scope_deny is the union of the children's scope_allow. Seed corpus:
// testdata/fuzz/FuzzDecodeScopeRegistry.
func FuzzDecodeScopeRegistry(f *testing.F) {
	f.Add([]byte(seedRegistry))
	f.Add([]byte(`{"allocations":[{"name":"a","pid":1,"delegated_from":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sameBothWays(t, data)
		reg, err := DecodeTable(data)
		if err != nil {
			return
		}
		out := reg.Encode()
		sameBothWays(t, out)
		again, err := DecodeTable(out)
		if err != nil {
			t.Fatalf("encoded registry does not decode: %v\n%s", err, out)
		}
		if string(again.Encode()) != string(out) {
			t.Fatalf("encoding not stable:\n%s", out)
		}
		if n := countNodes(reg.Tree(func(int, uint64) bool { return true })); n != len(reg.Allocations) {
			t.Fatalf("tree shows %d of %d allocations", n, len(reg.Allocations))
		}
		oddPIDsDead := func(pid int, _ uint64) bool { return pid%2 == 0 }
		again.ReclaimStale(oddPIDsDead)
		checkTreeInvariants(t, again)
	})
}

// sameBothWays: where the strict typed decode may be used, it gives what
// the field-by-field decode gives, error included.
func sameBothWays(t *testing.T, data []byte) {
	t.Helper()
	if !canDecodeStrict(data) {
		return
	}
	fast, ferr := decodeTable(data, true)
	slow, serr := decodeTable(data, false)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("strict: %+v, %v\nfield by field: %+v, %v\ninput %q", fast, ferr, slow, serr, data)
	}
}

func countNodes(nodes []Node) int {
	n := len(nodes)
	for _, c := range nodes {
		n += countNodes(c.Children)
	}
	return n
}

// checkTreeInvariants: parents exist and denies are the children's allows.
func checkTreeInvariants(t *testing.T, reg *Table) {
	t.Helper()
	for _, a := range reg.Allocations {
		if a.DelegatedFrom != "" && reg.find(a.DelegatedFrom) == nil {
			t.Fatalf("%s delegated from missing %q", a.Name, a.DelegatedFrom)
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
