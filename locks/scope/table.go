package scope

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
)

// Allocation is one holder's entry in the registry: the seed's fields
// (name, pid, socket, scope_allow, delegated_from) plus scope_deny,
// pid_start and created_at. Fields written by other programs are kept.
type Allocation struct {
	Name          string
	PID           int
	PIDStart      uint64 // field 22 of /proc/<pid>/stat; 0 when not recorded
	Socket        string
	ScopeAllow    []string
	ScopeDeny     []string // always the union of the direct children's ScopeAllow
	DelegatedFrom string   // "" is JSON null: not delegated
	CreatedAt     float64  // epoch seconds

	extra map[string]json.RawMessage // fields this version does not know
}

// detached is a copy of a that shares no memory with the content it was
// read from (decodeOwned): a holder keeps its allocation for as long as it
// runs, and a substring would keep the whole registry as read.
func (a Allocation) detached() Allocation {
	a.Name, a.Socket, a.DelegatedFrom = strings.Clone(a.Name), strings.Clone(a.Socket), strings.Clone(a.DelegatedFrom)
	a.ScopeAllow, a.ScopeDeny = cloneStrings(a.ScopeAllow), cloneStrings(a.ScopeDeny)
	if a.extra != nil {
		extra := make(map[string]json.RawMessage, len(a.extra))
		for k, v := range a.extra {
			extra[strings.Clone(k)] = slices.Clone(v)
		}
		a.extra = extra
	}
	return a
}

func cloneStrings(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.Clone(s)
	}
	return out
}

// Allow and Deny are the allocation's scopes, parsed. The registry only
// holds scopes that parse (DecodeTable checks), so nothing is lost.
func (a Allocation) Allow() []Spec { return mustParseSpecs(a.ScopeAllow) }
func (a Allocation) Deny() []Spec  { return mustParseSpecs(a.ScopeDeny) }

// Effective is the allocation's effective write scope: allow − deny.
func (a Allocation) Effective() Set { return Effective(a.Allow(), a.Deny()) }

func mustParseSpecs(texts []string) []Spec {
	out := make([]Spec, 0, len(texts))
	for _, t := range texts {
		if s, err := ParseSpec(t); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Table is the registry's content: the allocations plus whatever top-level
// fields other programs keep there.
type Table struct {
	Allocations []Allocation

	extra map[string]json.RawMessage
}

// checkAllocation is what the registry requires of an allocation read
// from it: a name, a pid, scopes that parse.
func checkAllocation(a *Allocation, hasPID bool) error {
	switch {
	case a.Name == "":
		return errors.New("name: missing or empty")
	case !hasPID:
		return errors.New("pid: missing")
	}
	for _, list := range [][]string{a.ScopeAllow, a.ScopeDeny} {
		for _, text := range list {
			if _, err := splitSpec(text); err != nil {
				return err
			}
		}
	}
	return nil
}
