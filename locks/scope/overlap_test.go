package scope

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustSpec(t testing.TB, text string) Spec {
	t.Helper()
	s, err := ParseSpec(text)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScopeConflictRule is the overlap rule of SPEC §4 as a table: two
// write scopes conflict when the sets they cover intersect; read never.
func TestScopeConflictRule(t *testing.T) {
	tests := []struct {
		a, b     string
		conflict bool
		why      string
	}{
		{"/a:write", "/a:write", true, "equal"},
		{"/a:write:recursive", "/a:write:recursive", true, "equal recursive"},
		{"/a:write:recursive", "/a/b/c:write", true, "deep path inside subtree"},
		{"/a:write:recursive", "/a/b/c:write:recursive", true, "subtree inside subtree"},
		{"/a:write", "/a/b:write", true, "/a/b is a direct entry of /a"},
		{"/a:write", "/a/b:write:recursive", true, "meet at /a/b"},
		{"/a:write", "/a/b/c:write:recursive", false, "/a covers /a/b, not /a/b/c"},
		{"/a:write", "/a/b/c:write", false, "grandchild, both flat"},
		{"/a/b:write", "/a/c:write", false, "siblings, flat"},
		{"/a/b:write:recursive", "/a/c:write:recursive", false, "siblings, recursive"},
		{"/a/b:write:recursive", "/a/bc:write:recursive", false, "prefix but not child"},
		{"/a/b:write", "/a/bc:write", false, "prefix but not child, flat"},
		{"/a/b:write:recursive", "/a/b.c:write", false, "prefix with dot"},
		{"/a/b/:write:recursive", "/a/b:write", true, "trailing slash"},
		{"/a/b/../c:write", "/a/c:write", true, "dot-dot cleaned"},
		{"/a/b/../c:write:recursive", "/a/b:write:recursive", false, "dot-dot leaves /a/b"},
		{"/:write", "/etc:write", true, "root's direct entry"},
		{"/:write", "/etc/passwd:write", false, "root flat"},
		{"/:write:recursive", "/etc/passwd:write", true, "root recursive"},
		{"/a:read:recursive", "/a:write:recursive", false, "read never conflicts"},
		{"/a:read", "/a:read", false, "read never conflicts"},
		{"/a:write:recursive", "/a/b:read", false, "read inside write"},
	}
	for _, tt := range tests {
		a, b := mustSpec(t, tt.a), mustSpec(t, tt.b)
		if got := a.ConflictsWith(b); got != tt.conflict {
			t.Errorf("%s vs %s (%s): conflict=%v, want %v", tt.a, tt.b, tt.why, got, tt.conflict)
		}
		if got := b.ConflictsWith(a); got != tt.conflict {
			t.Errorf("%s vs %s (%s, swapped): conflict=%v, want %v", tt.b, tt.a, tt.why, got, tt.conflict)
		}
		setsMeet := NewSet(writeSpecs([]Spec{a})...).Intersects(NewSet(writeSpecs([]Spec{b})...))
		if setsMeet != tt.conflict {
			t.Errorf("%s vs %s (%s): Set says %v, want %v", tt.a, tt.b, tt.why, setsMeet, tt.conflict)
		}
	}
}

// The brute-force oracle: a finite universe of paths holding, for every
// scope path used, entries and deeper descendants not named by any scope
// (the "c" names), so each cell of the algebra has a witness.
var (
	oracleScopePaths = pathsOver([]string{"a", "b"}, 2)
	oracleUniverse   = pathsOver([]string{"a", "b", "c"}, 4)
)

func pathsOver(names []string, depth int) []string {
	out := []string{"/"}
	level := []string{"/"}
	for range depth {
		var next []string
		for _, p := range level {
			for _, n := range names {
				next = append(next, strings.TrimSuffix(p, "/")+"/"+n)
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}

func oracleScopes() []Spec {
	var out []Spec
	for _, p := range oracleScopePaths {
		out = append(out, Spec{p, Write, false}, Spec{p, Write, true})
	}
	return out
}

// covers is the definition: recursive = the subtree, flat = the path and
// its direct entries.
func covers(s Spec, p string) bool {
	if s.Recursive {
		return isPathWithin(p, s.Path)
	}
	return p == s.Path || parentPath(p) == s.Path
}

type pathSet map[string]bool

func bruteSet(scopes []Spec) pathSet {
	out := pathSet{}
	for _, p := range oracleUniverse {
		for _, s := range scopes {
			if covers(s, p) {
				out[p] = true
			}
		}
	}
	return out
}

func (s pathSet) minus(o pathSet) pathSet {
	out := pathSet{}
	for p := range s {
		if !o[p] {
			out[p] = true
		}
	}
	return out
}

func (s pathSet) intersect(o pathSet) pathSet {
	out := pathSet{}
	for p := range s {
		if o[p] {
			out[p] = true
		}
	}
	return out
}

func (s pathSet) union(o pathSet) pathSet {
	out := pathSet{}
	for p := range s {
		out[p] = true
	}
	for p := range o {
		out[p] = true
	}
	return out
}

func TestScopesOverlapMatchesDefinition(t *testing.T) {
	all := oracleScopes()
	for _, a := range all {
		for _, b := range all {
			want := len(bruteSet([]Spec{a}).intersect(bruteSet([]Spec{b}))) > 0
			if got := overlaps(a, b); got != want {
				t.Errorf("overlaps(%s, %s) = %v, want %v", a, b, got, want)
			}
			if got := NewSet(a).Intersects(NewSet(b)); got != want {
				t.Errorf("Set %s ∩ %s non-empty = %v, want %v", a, b, got, want)
			}
		}
	}
}

// TestScopeSetMatchesOracle builds random expressions of the algebra and
// compares membership, emptiness and inclusion with the brute-force sets.
func TestScopeSetMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	all := oracleScopes()
	pick := func() []Spec {
		n := 1 + rng.IntN(3)
		out := make([]Spec, n)
		for i := range out {
			out[i] = all[rng.IntN(len(all))]
		}
		return out
	}
	for i := range 3000 {
		a, b, c := pick(), pick(), pick()
		setA, setB, setC := NewSet(a...), NewSet(b...), NewSet(c...)
		bruteA, bruteB, bruteC := bruteSet(a), bruteSet(b), bruteSet(c)
		exprs := []struct {
			name  string
			set   Set
			brute pathSet
		}{
			{"a−b", setA.Minus(setB), bruteA.minus(bruteB)},
			{"(a−b)∩c", setA.Minus(setB).Intersect(setC), bruteA.minus(bruteB).intersect(bruteC)},
			{"(a∪c)−b", setA.Union(setC).Minus(setB), bruteA.union(bruteC).minus(bruteB)},
			{"a−(b−c)", setA.Minus(setB.Minus(setC)), bruteA.minus(bruteB.minus(bruteC))},
		}
		for _, e := range exprs {
			for _, p := range oracleUniverse {
				if e.set.Contains(p) != e.brute[p] {
					t.Fatalf("case %d: %s with a=%v b=%v c=%v: Contains(%s)=%v, want %v (set %v)",
						i, e.name, a, b, c, p, e.set.Contains(p), e.brute[p], e.set)
				}
			}
			if e.set.IsEmpty() != (len(e.brute) == 0) {
				t.Fatalf("case %d: %s with a=%v b=%v c=%v: IsEmpty=%v, brute size %d", i, e.name, a, b, c, e.set.IsEmpty(), len(e.brute))
			}
		}
		wantSub := len(bruteA.minus(bruteB.minus(bruteC))) == 0
		if got := setA.SubsetOf(setB.Minus(setC)); got != wantSub {
			t.Fatalf("case %d: %v ⊆ %v − %v = %v, want %v", i, a, b, c, got, wantSub)
		}
	}
}

func TestEffectiveScope(t *testing.T) {
	tests := []struct {
		allow, deny []string
		in, out     []string // paths in and out of allow − deny
	}{
		{
			allow: []string{"/p:write:recursive"},
			deny:  []string{"/p/sub:write:recursive"},
			in:    []string{"/p", "/p/x", "/p/x/y", "/p/subway"},
			out:   []string{"/p/sub", "/p/sub/x", "/q"},
		},
		{ // flat minus recursive child: the entry is gone, the rest of /a stays
			allow: []string{"/a:write"},
			deny:  []string{"/a/b:write:recursive"},
			in:    []string{"/a", "/a/c"},
			out:   []string{"/a/b", "/a/b/x", "/a/c/d"},
		},
		{ // recursive minus flat child: the grandchildren stay
			allow: []string{"/a:write:recursive"},
			deny:  []string{"/a/b:write"},
			in:    []string{"/a", "/a/c", "/a/b/x/y", "/a/c/d"},
			out:   []string{"/a/b", "/a/b/x"},
		},
		{ // read denies take nothing away; read allows give nothing
			allow: []string{"/a:write:recursive", "/r:read:recursive"},
			deny:  []string{"/a/b:read:recursive"},
			in:    []string{"/a/b", "/a/b/c"},
			out:   []string{"/r", "/r/x"},
		},
		{ // all delegated: nothing left
			allow: []string{"/a:write:recursive"},
			deny:  []string{"/a:write:recursive"},
			out:   []string{"/a", "/a/b"},
		},
	}
	for _, tt := range tests {
		allow, deny := parseAll(t, tt.allow), parseAll(t, tt.deny)
		eff := Effective(allow, deny)
		for _, p := range tt.in {
			if !eff.Contains(p) {
				t.Errorf("%v − %v should hold %s (set %v)", tt.allow, tt.deny, p, eff)
			}
		}
		for _, p := range tt.out {
			if eff.Contains(p) {
				t.Errorf("%v − %v should not hold %s (set %v)", tt.allow, tt.deny, p, eff)
			}
		}
	}
}

func TestDescribeEffective(t *testing.T) {
	tests := []struct {
		allow, deny []string
		want        string
	}{
		{[]string{"/p:write:recursive"}, nil, "/p:write:recursive"},
		{[]string{"/p:write:recursive"}, []string{"/p/s:write:recursive", "/q:write"}, "/p:write:recursive except /p/s:write:recursive"},
		{[]string{"/p:write:recursive", "/q:write"}, []string{"/q:write"}, "/p:write:recursive"},
		{[]string{"/p:write:recursive"}, []string{"/p:write:recursive"}, "none"},
		{[]string{"/p:read"}, nil, "none"},
	}
	for _, tt := range tests {
		if got := DescribeEffective(parseAll(t, tt.allow), parseAll(t, tt.deny)).String(); got != tt.want {
			t.Errorf("DescribeEffective(%v, %v) = %q, want %q", tt.allow, tt.deny, got, tt.want)
		}
	}
}

func parseAll(t testing.TB, texts []string) []Spec {
	t.Helper()
	out, err := ParseSpecs(texts)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func ExampleSet_Minus() {
	allow := NewSet(Spec{"/project/src", Write, true})
	deny := NewSet(Spec{"/project/src/core", Write, true})
	eff := allow.Minus(deny)
	fmt.Println(eff.Contains("/project/src/main.go"), eff.Contains("/project/src/core/x.go"))
	// Output: true false
}

// The rest is used by the tests only.

// ConflictsWith is the overlap rule for two single scopes: they conflict
// when both are write scopes and the sets of paths they cover intersect.
// Read scopes never conflict.
func (s Spec) ConflictsWith(o Spec) bool {
	return s.Mode == Write && o.Mode == Write && overlaps(s, o)
}

// Union is the third set operation.
func (s Set) Union(o Set) Set {
	return combine(s, o, func(a, b cellMask) cellMask { return a | b })
}

// Contains reports whether the path p is in the set.
func (s Set) Contains(p string) bool {
	a, ok := s.deepestNamed(p)
	if !ok {
		return false
	}
	return s.cells[a]&distanceCell(a, p) != 0
}
