package locks

import (
	"encoding/hex"
	"time"
	"unicode/utf8"
)

// ScopeRequest is what a new holder asks the registry for.
type ScopeRequest struct {
	// Name must be unique among live allocations; "" picks 6 random hex
	// digits.
	Name string
	// Allow are the scopes requested, normalised (ParseScope, then
	// ResolveScope). At least one.
	Allow []Scope
	// DelegateFrom names the live allocation this one takes its scope
	// from; "" for none.
	DelegateFrom string
	// Socket is recorded as the seed's "socket" field.
	Socket string
	// PID and PIDStart identify the holder: withlock's own process (it
	// stays alive as supervisor). Zero means the calling process.
	PID      int
	PIDStart uint64
}

var scopeNamePattern = lazyRegexp(`^[A-Za-z0-9._-]{1,64}$`)

// check rejects a request that cannot be right whatever the registry holds.
func (q ScopeRequest) check() error {
	switch {
	case len(q.Allow) == 0:
		return scopeUsagef("no scope requested")
	case q.Name != "" && !scopeNamePattern().MatchString(q.Name):
		return scopeUsagef("scope name %q: want 1-64 of A-Z a-z 0-9 . _ -", q.Name)
	case !utf8.ValidString(q.Socket):
		return scopeUsagef("socket path %q is not valid UTF-8", q.Socket)
	case q.PID <= 0:
		return scopeUsagef("pid %d", q.PID)
	}
	for _, s := range q.Allow {
		if err := checkScopePath(s.Path); err != nil || s.Mode == 0 {
			return scopeUsagef("scope %q is not normalised", s)
		}
	}
	return nil
}

// Register adds the request's allocation after the conflict check; the
// caller has reclaimed stale allocations already, so every allocation here
// is live. It refuses:
//   - a duplicate name or an unknown parent (ErrScopeUsage);
//   - a write scope that meets another allocation's effective write scope,
//     or, when delegated, one that is not within the parent's effective
//     scope (*ScopeConflictError naming every competitor).
//
// On success the parent's scope_deny gains the new allow (RecomputeDenies).
func (r *ScopeRegistry) Register(q ScopeRequest, now time.Time) (ScopeAllocation, error) {
	if err := q.check(); err != nil {
		return ScopeAllocation{}, err
	}
	name, err := r.pickName(q.Name)
	if err != nil {
		return ScopeAllocation{}, err
	}
	var parent *ScopeAllocation
	if q.DelegateFrom != "" {
		if parent = r.find(q.DelegateFrom); parent == nil {
			return ScopeAllocation{}, scopeUsagef("unknown scope parent %q (no live allocation has that name)", q.DelegateFrom)
		}
	}
	if err := r.checkConflicts(q.Allow, parent); err != nil {
		return ScopeAllocation{}, err
	}
	a := ScopeAllocation{
		Name:          name,
		PID:           q.PID,
		PIDStart:      q.PIDStart,
		Socket:        q.Socket,
		ScopeAllow:    scopeStrings(q.Allow),
		ScopeDeny:     []string{},
		DelegatedFrom: q.DelegateFrom,
		CreatedAt:     epochSeconds(now),
	}
	r.Allocations = append(r.Allocations, a)
	r.RecomputeDenies()
	return a, nil
}

func (r *ScopeRegistry) pickName(want string) (string, error) {
	if want != "" {
		if a := r.find(want); a != nil {
			return "", scopeUsagef("scope name %q is taken by live pid %d", want, a.PID)
		}
		return want, nil
	}
	for {
		if name := randomScopeName(); r.find(name) == nil {
			return name, nil
		}
	}
}

func randomScopeName() string {
	var b [3]byte
	randomBytes(b[:])
	return hex.EncodeToString(b[:])
}

// checkConflicts compares the requested write scopes with every other
// allocation's effective write scope and, when delegated, with the
// parent's. The parent itself is no competitor: a delegated scope lies
// inside its parent's by design, and the parent's ancestors have the
// parent's allow in their deny already.
func (r *ScopeRegistry) checkConflicts(allow []Scope, parent *ScopeAllocation) error {
	writes := writeScopes(allow)
	if len(writes) == 0 {
		return nil
	}
	want := NewScopeSet(writes...)
	conflict := &ScopeConflictError{Requested: scopeStrings(allow)}
	for i := range r.Allocations {
		other := &r.Allocations[i]
		if other == parent {
			continue
		}
		if c, ok := competitor(want, writes, other); ok {
			conflict.Competitors = append(conflict.Competitors, c)
		}
	}
	if parent != nil && !want.SubsetOf(parent.Effective()) {
		conflict.Parent = &ScopeCompetitor{Name: parent.Name, PID: parent.PID, Scopes: parent.ScopeAllow}
	}
	if conflict.Parent != nil || len(conflict.Competitors) > 0 {
		return conflict
	}
	return nil
}

// competitor reports whether other's effective write scope meets want.
// Most allocations share no path with the request, so their allow items
// are screened with the cheap pairwise rule, parsed one at a time, before
// the set algebra runs: a start screens every allocation in the registry.
func competitor(want ScopeSet, writes []Scope, other *ScopeAllocation) (ScopeCompetitor, bool) {
	var touching []string
	for _, text := range other.ScopeAllow {
		s, err := ParseScope(text)
		if err != nil || s.Mode != ScopeWrite {
			continue // Allow() drops what does not parse; reads never conflict
		}
		for _, w := range writes {
			if scopesOverlap(w, s) {
				touching = append(touching, s.String())
				break
			}
		}
	}
	if len(touching) == 0 || !want.Intersects(other.Effective()) {
		return ScopeCompetitor{}, false
	}
	return ScopeCompetitor{Name: other.Name, PID: other.PID, Scopes: touching}, true
}
