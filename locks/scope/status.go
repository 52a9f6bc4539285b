package scope

import (
	"slices"
	"strings"
)

// Node is one allocation in the status view, with the allocations
// delegated from it as children.
type Node struct {
	Name          string        `json:"name"`
	PID           int           `json:"pid"`
	Alive         bool          `json:"alive"`
	Socket        string        `json:"socket,omitempty"`
	DelegatedFrom string        `json:"delegated_from,omitempty"`
	Allow         []string      `json:"allow"`
	Deny          []string      `json:"deny"`
	Effective     EffectiveView `json:"effective"`
	CreatedAt     float64       `json:"created_at,omitempty"`
	Children      []Node        `json:"children,omitempty"`
}

// EffectiveView describes an effective write scope exactly: the paths of
// Write except those of Except. Write items wholly denied and Except items
// that touch no Write item are left out.
type EffectiveView struct {
	Write  []string `json:"write"`
	Except []string `json:"except"`
}

func (e EffectiveView) String() string {
	if len(e.Write) == 0 {
		return "none"
	}
	out := strings.Join(e.Write, ", ")
	if len(e.Except) > 0 {
		out += " except " + strings.Join(e.Except, ", ")
	}
	return out
}

// DescribeEffective is the allocation's effective write scope, allow −
// deny, in the terms of its own scopes.
func DescribeEffective(allow, deny []Spec) EffectiveView {
	denied := NewSet(writeSpecs(deny)...)
	e := EffectiveView{Write: []string{}, Except: []string{}}
	var kept []Spec
	for _, a := range writeSpecs(allow) {
		if !NewSet(a).SubsetOf(denied) {
			kept = append(kept, a)
			e.Write = append(e.Write, a.String())
		}
	}
	for _, d := range writeSpecs(deny) {
		if slices.ContainsFunc(kept, func(a Spec) bool { return overlaps(a, d) }) {
			e.Except = append(e.Except, d.String())
		}
	}
	return e
}

// Tree arranges the allocations by delegation: roots first, in registry
// order, each with its children. Dangling or looping delegated_from links
// are read the way the next write will fix them (as roots), so a registry
// left odd by another program still shows every allocation once.
func (r *Table) Tree(alive LiveFunc) []Node {
	view := &Table{Allocations: r.Allocations}
	view.remove(func(*Allocation) bool { return false }) // a new slice: r stays as it is
	index := view.nameIndex(nil)
	children := make(map[string][]int)
	var roots []int
	for i, a := range view.Allocations {
		if _, ok := index[a.DelegatedFrom]; ok {
			children[a.DelegatedFrom] = append(children[a.DelegatedFrom], i)
		} else {
			roots = append(roots, i)
		}
	}
	var build func(i int) Node
	build = func(i int) Node {
		a := &view.Allocations[i]
		n := Node{
			Name: a.Name, PID: a.PID, Alive: alive(a.PID, a.PIDStart), Socket: a.Socket,
			DelegatedFrom: a.DelegatedFrom, Allow: a.ScopeAllow, Deny: a.ScopeDeny,
			Effective: DescribeEffective(a.Allow(), a.Deny()), CreatedAt: a.CreatedAt,
		}
		kids := children[a.Name]
		delete(children, a.Name) // a duplicated name takes its children once
		for _, c := range kids {
			n.Children = append(n.Children, build(c))
		}
		return n
	}
	nodes := make([]Node, 0, len(roots))
	for _, i := range roots {
		nodes = append(nodes, build(i))
	}
	return nodes
}
