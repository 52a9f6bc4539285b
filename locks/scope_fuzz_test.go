package locks

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzParseScope: whatever the text, ParseScope returns a normalised scope
// or an ErrScopeUsage error; a parsed scope prints to text that parses back
// to itself. Seed corpus: testdata/fuzz/FuzzParseScope.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"/project/src:write:recursive", "/a/../b/:read", "/a:b:write", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseScope(text)
		if err != nil {
			return
		}
		if !strings.HasPrefix(s.Path, "/") || filepath.Clean(s.Path) != s.Path {
			t.Fatalf("ParseScope(%q) path %q is not absolute and clean", text, s.Path)
		}
		if s.Mode != ScopeRead && s.Mode != ScopeWrite {
			t.Fatalf("ParseScope(%q) mode %v", text, s.Mode)
		}
		again, err := ParseScope(s.String())
		if err != nil || again != s {
			t.Fatalf("ParseScope(%q) = %+v prints %q which parses to %+v, %v", text, s, s.String(), again, err)
		}
		if !scopesOverlap(s, s) || !NewScopeSet(s).Contains(s.Path) {
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
		reg, err := DecodeScopeRegistry(data)
		if err != nil {
			return
		}
		out := reg.Encode()
		sameBothWays(t, out)
		again, err := DecodeScopeRegistry(out)
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

// sameBothWays: reading allocations as encoded (literal matching) gives
// what reading them token by token gives, error included.
func sameBothWays(t *testing.T, data []byte) {
	t.Helper()
	fast, ferr := decodeScopeRegistry(data, true)
	slow, serr := decodeScopeRegistry(data, false)
	if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fast, slow) {
		t.Fatalf("as encoded: %+v, %v\ntoken by token: %+v, %v\ninput %q", fast, ferr, slow, serr, data)
	}
}

func countNodes(nodes []ScopeNode) int {
	n := len(nodes)
	for _, c := range nodes {
		n += countNodes(c.Children)
	}
	return n
}

// checkTreeInvariants: parents exist and denies are the children's allows.
func checkTreeInvariants(t *testing.T, reg *ScopeRegistry) {
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

// FuzzScopeJSONScanner holds the registry's JSON scanner to encoding/json:
// the same inputs are valid, and strings decode to the same values. Seed
// corpus: testdata/fuzz/FuzzScopeJSONScanner.
func FuzzScopeJSONScanner(f *testing.F) {
	for _, s := range []string{seedRegistry, `"a\u00e9\ud800x"`, `[1, -0.5e+3, true, null, {"a": []}]`, `01`, `"\x01"`, ` {"a" : "b" } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &jsonScanner{data: string(data)}
		err := s.document(func() error { _, err := s.skip(); return err })
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid(%q) = %v, scanner error %v", data, valid, err)
		}
		if err != nil {
			return
		}
		var want any
		if json.Unmarshal(data, &want) != nil {
			return // valid, but a number overflows float64 (1E700): nothing to compare
		}
		if str, ok := want.(string); ok {
			s := &jsonScanner{data: string(data)}
			got, err := s.str()
			if err != nil || got != str {
				t.Fatalf("string %q: scanner %q %v, encoding/json %q", data, got, err, str)
			}
		}
		if _, err := DecodeScopeRegistry(data); err == nil {
			if _, ok := want.(map[string]any); !ok {
				t.Fatalf("registry accepted a non-object %q", data)
			}
		}
	})
}
