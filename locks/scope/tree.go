package scope

import "slices"

// The delegation tree: who delegated to whom, and the rules that keep
// scope_deny and delegated_from right whenever an allocation goes away
// (seed 004: 正常終了 and stale の自動回収).

// reclaimFor is the stale sweep of a start asking for w (seed 004: 起動 →
// stale 検出 → 自動回収), judging each holder only as well as the answer
// needs (only w's name, parent and scopes count):
//   - every holder gets the seed's check, kill(pid, 0) (present): a pid no
//     process has is reclaimed, whatever it held;
//   - the holders whose liveness can change the answer — the allocation
//     with the name asked for, the parent delegated from, and every
//     allocation with a scope that overlaps one asked for — are judged in
//     full (alive: zombie, start time, so a reused pid is reclaimed too).
//     Only these can be a competitor, the parent, or the child of the
//     parent that holds part of what is asked for (a child's allow lies in
//     what it overlaps).
//
// A holder whose pid runs but is reused, and which overlaps nothing asked
// for, stays until a start that it would stand in the way of judges it, or
// until its pid ends: it admits or refuses no one meanwhile. The full check
// reads /proc/<pid>/stat; kill(pid, 0) is one system call, so a start stays
// cheap with thousands of holders that have nothing to do with it.
func (r *Table) reclaimFor(w Request, alive LiveFunc, present func(pid int) bool) []Allocation {
	return r.remove(func(a *Allocation) bool {
		if w.concerns(a) {
			return !alive(a.PID, a.PIDStart)
		}
		return !present(a.PID)
	})
}

// concerns reports whether a's liveness can change the answer to w: it has
// the name or is the parent asked for, or one of its scopes (any mode)
// overlaps one asked for (any mode).
func (w Request) concerns(a *Allocation) bool {
	if a.Name == w.Name || (w.DelegateFrom != "" && a.Name == w.DelegateFrom) {
		return true
	}
	for _, text := range a.ScopeAllow {
		s, err := ParseSpec(text)
		if err != nil {
			return true // cannot tell: judge it in full
		}
		if slices.ContainsFunc(w.Allow, func(q Spec) bool { return overlaps(q, s) }) {
			return true
		}
	}
	return false
}

// Release removes the allocation with this name and pid (both must match:
// a name may have been reused after we were reclaimed) and hands its scope
// back as a reclaim does (remove). It reports whether it was there.
func (r *Table) Release(name string, pid int) bool {
	return len(r.remove(func(a *Allocation) bool { return a.Name == name && a.PID == pid })) > 0
}

// remove drops the allocations isGone picks and hands their scope back:
// every other allocation is re-parented past the removed ones to its
// nearest kept ancestor (reparent), loops a foreign writer made are
// broken, and every scope_deny is recomputed. So with A→B→D and B gone,
// D is delegated from A, A's deny is D's allow, and the rest of B's scope
// is A's again. It returns the allocations removed.
func (r *Table) remove(isGone func(*Allocation) bool) []Allocation {
	gone := make([]bool, len(r.Allocations))
	for i := range r.Allocations {
		gone[i] = isGone(&r.Allocations[i])
	}
	index := r.nameIndex(gone)
	kept := make([]Allocation, 0, len(r.Allocations))
	var removed []Allocation
	for i, a := range r.Allocations {
		if gone[i] {
			removed = append(removed, a)
			continue
		}
		a.DelegatedFrom = reparent(r.Allocations, index, gone, a.DelegatedFrom)
		kept = append(kept, a)
	}
	r.Allocations = kept
	r.breakCycles()
	r.RecomputeDenies()
	return removed
}

// nameIndex maps each name to its allocation's position — the first kept
// one when a foreign writer left two with one name; gone may be nil (none
// gone).
func (r *Table) nameIndex(gone []bool) map[string]int {
	index := make(map[string]int, len(r.Allocations))
	for i, a := range r.Allocations {
		if j, seen := index[a.Name]; !seen || (gone != nil && gone[j] && !gone[i]) {
			index[a.Name] = i
		}
	}
	return index
}

// reparent is the seed's re-parenting rule (子 Pod の delegated_from を親に
// 付け替え): an allocation whose parent goes away is delegated from its
// nearest ancestor that stays. It follows delegated_from from parent
// through the removed allocations to the first kept one; "" when the chain
// ends at a root that goes (the allocation becomes a root) or loops. A
// parent that is not in the registry at all is kept as named: nobody judged
// it gone, and when its holder puts its allocation back (Registry.Keep) the
// tree is whole again.
func reparent(allocs []Allocation, index map[string]int, gone []bool, parent string) string {
	for steps := 0; parent != "" && steps <= len(allocs); steps++ {
		i, ok := index[parent]
		if !ok || !gone[i] {
			return parent
		}
		parent = allocs[i].DelegatedFrom
	}
	return ""
}

// breakCycles makes an allocation a root when following delegated_from from
// it comes back to it — of each loop the first member in registry order,
// which breaks the loop for the others; only a foreign writer can create
// one.
func (r *Table) breakCycles() {
	index := r.nameIndex(nil)
	for i := range r.Allocations {
		j := i
		for range r.Allocations {
			next, ok := index[r.Allocations[j].DelegatedFrom]
			if !ok {
				break
			}
			if j = next; j == i {
				r.Allocations[i].DelegatedFrom = ""
				break
			}
		}
	}
}

// RecomputeDenies sets every scope_deny to the union of its direct
// children's scope_allow (seed 004: 分譲 adds to the spawner's deny;
// 返却 takes it away).
func (r *Table) RecomputeDenies() {
	index := r.nameIndex(nil)
	for i := range r.Allocations {
		r.Allocations[i].ScopeDeny = []string{}
	}
	for _, child := range r.Allocations {
		p, ok := index[child.DelegatedFrom]
		if !ok {
			continue
		}
		for _, s := range child.ScopeAllow {
			if deny := r.Allocations[p].ScopeDeny; !slices.Contains(deny, s) {
				r.Allocations[p].ScopeDeny = append(deny, s)
			}
		}
	}
}

// find returns the allocation with this name, or nil.
func (r *Table) find(name string) *Allocation {
	for i := range r.Allocations {
		if r.Allocations[i].Name == name {
			return &r.Allocations[i]
		}
	}
	return nil
}
