package scope

import "strings"

// Set is an exact set of paths built from scopes with union,
// intersection and subtraction — what "allow − deny" and "requested ⊆
// parent's effective" need.
//
// Why it is exact with finitely many facts: let M be the paths named by the
// scopes a set was built from. Every path x either lies under no element
// of M (then no scope covers it), or has a deepest ancestor-or-self m in M
// and a distance d from it. Whether a scope covers x depends only on m and
// on d being 0, 1 or 2+:
//   - recursive q covers x iff q is an ancestor-or-self of m;
//   - non-recursive q covers x iff (m = q and d ≤ 1) or (d = 0 and q is
//     m's parent).
//
// So the paths split into cells (m, 0), (m, 1), (m, 2+), each non-empty
// (there are always names not in M), and a set is a bit mask per element
// of M. Sets built over different M are compared on the union of both:
// a cell (m', c') of the finer split lies inside the cell of m's deepest
// ancestor-or-self a in the coarser M — in (a, c') when a = m', else in
// (a, 1) when m' is a's direct entry and c' = 0, else in (a, 2+).
//
// The zero value is the empty set.
type Set struct {
	cells map[string]cellMask
}

// cellMask holds which of the cells (m, 0), (m, 1), (m, 2+) are in a set.
type cellMask uint8

const (
	cellSelf    cellMask = 1 << iota // the path m itself
	cellEntries                      // direct entries of m not named in M
	cellDeeper                       // deeper descendants whose deepest named ancestor is m
	cellAll     = cellSelf | cellEntries | cellDeeper
)

// NewSet is the union of the paths the scopes cover; modes are
// ignored (filter with writeSpecs first when only writes count).
func NewSet(scopes ...Spec) Set {
	set := Set{cells: make(map[string]cellMask, len(scopes))}
	for _, s := range scopes {
		set.cells[s.Path] = 0
	}
	for m := range set.cells {
		var mask cellMask
		for _, s := range scopes {
			mask |= cellMaskOf(s, m)
		}
		set.cells[m] = mask
	}
	return set
}

// cellMaskOf says which cells of the named path m scope s covers; m and
// s.Path both belong to the same M.
func cellMaskOf(s Spec, m string) cellMask {
	if s.Recursive {
		if isPathWithin(m, s.Path) {
			return cellAll
		}
		return 0
	}
	switch {
	case m == s.Path:
		return cellSelf | cellEntries
	case parentPath(m) == s.Path:
		return cellSelf
	}
	return 0
}

// Effective is the write scope an allocation really holds: its write
// allows minus the write scopes delegated to its children. Read scopes
// never conflict, so they neither add nor take away.
func Effective(allow, deny []Spec) Set {
	return NewSet(writeSpecs(allow)...).Minus(NewSet(writeSpecs(deny)...))
}

// Intersect and Minus are the set operations the registry needs.
func (s Set) Intersect(o Set) Set {
	return combine(s, o, func(a, b cellMask) cellMask { return a & b })
}

func (s Set) Minus(o Set) Set {
	return combine(s, o, func(a, b cellMask) cellMask { return a &^ b })
}

// IsEmpty reports whether the set holds no path.
func (s Set) IsEmpty() bool {
	for _, mask := range s.cells {
		if mask != 0 {
			return false
		}
	}
	return true
}

// Intersects reports whether some path is in both sets.
func (s Set) Intersects(o Set) bool { return !s.Intersect(o).IsEmpty() }

// SubsetOf reports whether every path of s is in o.
func (s Set) SubsetOf(o Set) bool { return s.Minus(o).IsEmpty() }

// combine applies op cell by cell over the union of both named sets.
func combine(s, o Set, op func(a, b cellMask) cellMask) Set {
	out := Set{cells: make(map[string]cellMask, len(s.cells)+len(o.cells))}
	for _, src := range []Set{s, o} {
		for m := range src.cells {
			if _, done := out.cells[m]; !done {
				out.cells[m] = op(s.maskAt(m), o.maskAt(m))
			}
		}
	}
	return out
}

// maskAt gives the cells of a (possibly finer) named path m that lie in s.
func (s Set) maskAt(m string) cellMask {
	if mask, ok := s.cells[m]; ok {
		return mask
	}
	a, ok := s.deepestNamed(m)
	if !ok {
		return 0
	}
	// m ≠ a: m itself is a's entry or deeper; everything below m is deeper.
	if s.cells[a]&distanceCell(a, m) != 0 {
		if s.cells[a]&cellDeeper != 0 {
			return cellAll
		}
		return cellSelf
	}
	if s.cells[a]&cellDeeper != 0 {
		return cellEntries | cellDeeper
	}
	return 0
}

// deepestNamed finds the deepest named ancestor-or-self of p.
func (s Set) deepestNamed(p string) (string, bool) {
	for ; p != ""; p = parentPath(p) {
		if _, ok := s.cells[p]; ok {
			return p, true
		}
	}
	return "", false
}

// distanceCell is the cell of a, relative to its ancestor-or-self a, that
// the path p falls in when a is p's deepest named ancestor.
func distanceCell(a, p string) cellMask {
	switch {
	case p == a:
		return cellSelf
	case parentPath(p) == a:
		return cellEntries
	}
	return cellDeeper
}

// isPathWithin reports whether p is root or lies under it (component-wise:
// /a/bc is not within /a/b).
func isPathWithin(p, root string) bool {
	if root == "/" || p == root {
		return true
	}
	return strings.HasPrefix(p, root) && len(p) > len(root) && p[len(root)] == '/'
}

// parentPath is the directory holding p, or "" for the root.
func parentPath(p string) string {
	if p == "/" {
		return ""
	}
	i := strings.LastIndexByte(p, '/')
	if i == 0 {
		return "/"
	}
	return p[:i]
}
