package scope

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/withlock/withlock/locks"
)

// Request is what a new holder asks the registry for.
type Request struct {
	// Name must be unique among live allocations; "" picks 6 random hex
	// digits.
	Name string
	// Allow are the scopes requested, normalised (ResolveSpec for what a
	// user gives). At least one.
	Allow []Spec
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

// validName reports whether name is 1-64 of A-Z a-z 0-9 . _ -.
func validName(name string) bool {
	const allowed = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
	return len(name) >= 1 && len(name) <= 64 && strings.Trim(name, allowed) == ""
}

// check rejects a request that cannot be right whatever the registry holds.
func (q Request) check() error {
	switch {
	case len(q.Allow) == 0:
		return usagef("no scope requested")
	case q.Name != "" && !validName(q.Name):
		return usagef("scope name %q: want 1-64 of A-Z a-z 0-9 . _ -", q.Name)
	case !utf8.ValidString(q.Socket):
		return usagef("socket path %q is not valid UTF-8", q.Socket)
	case q.PID <= 0:
		return usagef("pid %d", q.PID)
	}
	for _, s := range q.Allow {
		if err := checkPath(s.Path); err != nil || s.Mode == 0 {
			return usagef("scope %q is not normalised", s)
		}
	}
	return nil
}

// Register adds the request's allocation after the conflict check; the
// caller has reclaimed stale allocations already, so every allocation here
// is live. It refuses:
//   - a duplicate name or an unknown parent (ErrUsage);
//   - a write scope that meets another allocation's effective write scope,
//     or, when delegated, one that is not within the parent's effective
//     scope (*ConflictError naming every competitor).
//
// On success the parent's scope_deny gains the new allow (RecomputeDenies).
func (r *Table) Register(q Request, now time.Time) (Allocation, error) {
	if err := q.check(); err != nil {
		return Allocation{}, err
	}
	name, err := r.pickName(q.Name)
	if err != nil {
		return Allocation{}, err
	}
	var parent *Allocation
	if q.DelegateFrom != "" {
		if parent = r.find(q.DelegateFrom); parent == nil {
			return Allocation{}, usagef("unknown scope parent %q (no live allocation has that name)", q.DelegateFrom)
		}
	}
	if err := r.checkConflicts(specStrings(q.Allow), q.Allow, parent, nil); err != nil {
		return Allocation{}, err
	}
	a := Allocation{
		Name:          name,
		PID:           q.PID,
		PIDStart:      q.PIDStart,
		Socket:        q.Socket,
		ScopeAllow:    specStrings(q.Allow),
		ScopeDeny:     []string{},
		DelegatedFrom: q.DelegateFrom,
		CreatedAt:     locks.Epoch(now),
	}
	r.Allocations = append(r.Allocations, a)
	r.RecomputeDenies()
	return a, nil
}

func (r *Table) pickName(want string) (string, error) {
	if want != "" {
		if a := r.find(want); a != nil {
			return "", usagef("scope name %q is taken by live pid %d", want, a.PID)
		}
		return want, nil
	}
	for {
		if name := randomName(); r.find(name) == nil {
			return name, nil
		}
	}
}

func randomName() string {
	var b [3]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// checkConflicts is the seed's write-conflict check (write 衝突チェック): the
// requested write scopes against every other allocation's effective write
// scope — but those skip marks — and, when delegated, the delegation rule.
// The parent itself is no competitor: a delegated scope
// lies inside its parent's by design, and the parent's ancestors have the
// parent's allow in their deny already. The error is a *ConflictError.
func (r *Table) checkConflicts(requested []string, allow []Spec, parent *Allocation, skip map[int]bool) error {
	writes := writeSpecs(allow)
	if len(writes) == 0 {
		return nil
	}
	want := NewSet(writes...)
	conflict := &ConflictError{Requested: requested}
	for i := range r.Allocations {
		other := &r.Allocations[i]
		if other == parent || skip[i] {
			continue
		}
		if c, ok := competitor(want, writes, other); ok {
			conflict.Competitors = append(conflict.Competitors, c)
		}
	}
	// The seed's delegation rule (scope 分譲): a delegated request may only
	// take write scope its parent effectively holds — inside the parent's
	// allow and not already handed to another child.
	if parent != nil && !want.SubsetOf(parent.Effective()) {
		conflict.Parent = &Competitor{Name: parent.Name, PID: parent.PID, Scopes: parent.ScopeAllow}
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
func competitor(want Set, writes []Spec, other *Allocation) (Competitor, bool) {
	var touching []string
	for _, text := range other.ScopeAllow {
		s, err := ParseSpec(text)
		if err != nil || s.Mode != Write {
			continue // Allow() drops what does not parse; reads never conflict
		}
		if slices.ContainsFunc(writes, func(w Spec) bool { return overlaps(w, s) }) {
			touching = append(touching, s.String())
		}
	}
	if len(touching) == 0 || !want.Intersects(other.Effective()) {
		return Competitor{}, false
	}
	return Competitor{Name: other.Name, PID: other.PID, Scopes: touching}, true
}

// Restore puts a holder's own allocation back after it went missing from
// the registry, as it was (name, scope, parent, created_at); the caller
// has reclaimed stale allocations. It refuses with ErrLost when the name is
// taken, the parent is there but no longer holds the scope, or another
// live holder — not one of a's own delegates, which still point to it —
// now writes where a does.
func (r *Table) Restore(a Allocation) error {
	if other := r.find(a.Name); other != nil {
		return fmt.Errorf("%w: its name %q is taken by pid %d", ErrLost, a.Name, other.PID)
	}
	// nil for a root (no allocation has the name ""), or a parent gone
	// too: it puts itself back.
	parent := r.find(a.DelegatedFrom)
	// a's own delegates still point to it: they are no competitors.
	if err := r.checkConflicts(a.ScopeAllow, a.Allow(), parent, r.delegatesOf(a.Name)); err != nil {
		return fmt.Errorf("%w: %w", ErrLost, err)
	}
	a.extra = nil
	r.Allocations = append(r.Allocations, a)
	r.RecomputeDenies()
	return nil
}

// delegatesOf marks the allocations delegated from name, directly or
// further down.
func (r *Table) delegatesOf(name string) map[int]bool {
	marked := make(map[int]bool)
	parents := map[string]bool{name: true}
	for grown := true; grown; {
		grown = false
		for i, a := range r.Allocations {
			if !marked[i] && parents[a.DelegatedFrom] {
				marked[i], parents[a.Name], grown = true, true, true
			}
		}
	}
	return marked
}
