package scope

// overlaps reports whether the paths covered by a and b intersect,
// whatever their modes. With N(p) = p and its direct entries and R(p) = the
// subtree at p:
//   - R(p) ∩ R(q): one path lies within the other;
//   - R(p) ∩ N(q): q lies within p (then q is in both), or p is a direct
//     entry of q (then p is in both);
//   - N(p) ∩ N(q): p = q, or one is a direct entry of the other.
//
// Siblings such as /a/b and /a/bc never overlap: paths compare by
// component. Set gives the same answer (a test checks both agree).
func overlaps(a, b Spec) bool {
	switch {
	case a.Recursive && b.Recursive:
		return isPathWithin(a.Path, b.Path) || isPathWithin(b.Path, a.Path)
	case a.Recursive:
		return recursiveMeetsFlat(a.Path, b.Path)
	case b.Recursive:
		return recursiveMeetsFlat(b.Path, a.Path)
	}
	return a.Path == b.Path || parentPath(a.Path) == b.Path || parentPath(b.Path) == a.Path
}

// recursiveMeetsFlat: the subtree at r and the path f with its entries.
func recursiveMeetsFlat(r, f string) bool {
	return isPathWithin(f, r) || parentPath(r) == f
}
