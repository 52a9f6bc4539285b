package scope

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestScopeRegisterRecordsTheAllocation(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	q := me.request("", "/project/src:write:recursive", "/project/doc:read")
	q.Socket = "/run/pod-a.sock"
	a := mustRegister(t, f, q)
	if len(a.Name) != 6 || strings.Trim(a.Name, "0123456789abcdef") != "" {
		t.Errorf("default name %q is not 6 hex digits", a.Name)
	}
	got := allocationNamed(t, readRegistryFile(t, f.Path), a.Name)
	want := Allocation{
		Name: a.Name, PID: me.PID, PIDStart: me.Start, Socket: "/run/pod-a.sock",
		ScopeAllow: []string{"/project/src:write:recursive", "/project/doc:read"}, ScopeDeny: []string{},
		CreatedAt: got.CreatedAt,
	}
	if !reflect.DeepEqual(got, want) || got.CreatedAt == 0 {
		t.Fatalf("on disk %#v\nwant %#v", got, want)
	}
}

func TestScopeConflictNamesEveryCompetitor(t *testing.T) {
	f, _ := newRegistry(t)
	one, two := liveProcess(t), liveProcess(t)
	mustRegister(t, f, one.request("abc123", "/project/src:write:recursive"))
	mustRegister(t, f, two.request("def456", "/project/doc:write"))
	mustRegister(t, f, two.request("reader", "/project:read:recursive"))
	before, _ := readFileString(f.Path)

	_, err := f.Register(context.Background(), self(t).request("new", "/project:write:recursive"))
	var conflict *ConflictError
	if !errors.As(err, &conflict) || !errors.Is(err, ErrConflict) {
		t.Fatalf("register = %v, want a *ConflictError", err)
	}
	want := []Competitor{
		{Name: "abc123", PID: one.PID, Scopes: []string{"/project/src:write:recursive"}},
		{Name: "def456", PID: two.PID, Scopes: []string{"/project/doc:write"}},
	}
	if !reflect.DeepEqual(conflict.Competitors, want) {
		t.Fatalf("competitors %+v, want %+v", conflict.Competitors, want)
	}
	msg := err.Error()
	for _, part := range []string{"abc123", strconv.Itoa(one.PID), "/project/src:write:recursive", "def456", strconv.Itoa(two.PID), "/project/doc:write"} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q does not name %q", msg, part)
		}
	}
	if strings.Contains(msg, "reader") || strings.Contains(msg, "\n") {
		t.Errorf("message %q names a reader or spans lines", msg)
	}
	if after, _ := readFileString(f.Path); after != before {
		t.Errorf("a refused registration changed the registry:\n%s\n---\n%s", before, after)
	}
}

func TestScopeReadNeverConflicts(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	mustRegister(t, f, me.request("w", "/p:write:recursive"))
	mustRegister(t, f, me.request("r1", "/p:read:recursive"))
	mustRegister(t, f, me.request("r2", "/p/x:read"))
	if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"w", "r1", "r2"}) {
		t.Fatalf("allocations %v", got)
	}
}

func TestScopeUsageErrors(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	mustRegister(t, f, me.request("taken", "/p:write"))
	for _, q := range []Request{
		me.request("taken", "/q:write"), // duplicate live name
		{Name: "x", PID: me.PID, Allow: mustSpecs([]string{"/q:write"}), DelegateFrom: "nobody"}, // unknown parent
		me.request("bad name", "/q:write"),
		me.request("empty"),
	} {
		_, err := f.Register(context.Background(), q)
		if !errors.Is(err, ErrUsage) || errors.Is(err, ErrConflict) {
			t.Errorf("register %+v = %v, want ErrUsage", q, err)
		}
	}
}

// TestScopeDelegation follows seed 004's 分譲: the child's scope must lie in
// the parent's effective scope; the parent's deny gains it.
func TestScopeDelegation(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	mustRegister(t, f, me.request("A", "/project/src:write:recursive"))
	child := me.request("C", "/project/src/core:write:recursive")
	child.DelegateFrom = "A"
	mustRegister(t, f, child)

	reg := readRegistryFile(t, f.Path)
	if a := allocationNamed(t, reg, "A"); !slices.Equal(a.ScopeDeny, []string{"/project/src/core:write:recursive"}) {
		t.Errorf("A's deny = %v", a.ScopeDeny)
	}
	if c := allocationNamed(t, reg, "C"); c.DelegatedFrom != "A" {
		t.Errorf("C delegated from %q", c.DelegatedFrom)
	}

	tests := []struct {
		name, from, scope string
		competitors       []string
		outsideParent     bool
	}{
		{"inside-C", "", "/project/src/core/x:write", []string{"C"}, false},
		{"rest-of-A", "", "/project/src/main.go:write", []string{"A"}, false},
		{"flat-parent", "", "/project/src:write", []string{"A", "C"}, false}, // meets C at its entry "core"
		{"both-rec", "", "/project/src:write:recursive", []string{"A", "C"}, false},
		{"from-A-into-C", "A", "/project/src/core/y:write", []string{"C"}, true},
		{"from-A-outside", "A", "/etc:write", nil, true},
		{"from-C-outside-C", "C", "/project/src/util:write", []string{"A"}, true},
	}
	for _, tt := range tests {
		q := me.request(tt.name, tt.scope)
		q.DelegateFrom = tt.from
		_, err := f.Register(context.Background(), q)
		var conflict *ConflictError
		if !errors.As(err, &conflict) {
			t.Errorf("%s: register = %v, want a conflict", tt.name, err)
			continue
		}
		var got []string
		for _, c := range conflict.Competitors {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, tt.competitors) || (conflict.Parent != nil) != tt.outsideParent {
			t.Errorf("%s: competitors %v outside-parent %v, want %v %v (%v)", tt.name, got, conflict.Parent != nil, tt.competitors, tt.outsideParent, err)
		}
	}

	// A read scope outside the parent is fine; so is a further delegation.
	q := me.request("grandchild", "/project/src/core/db:write:recursive", "/usr/share:read")
	q.DelegateFrom = "C"
	mustRegister(t, f, q)
	reg = readRegistryFile(t, f.Path)
	if c := allocationNamed(t, reg, "C"); !slices.Equal(c.ScopeDeny, []string{"/project/src/core/db:write:recursive", "/usr/share:read"}) {
		t.Errorf("C's deny = %v", c.ScopeDeny)
	}
	if a := allocationNamed(t, reg, "A"); !slices.Equal(a.ScopeDeny, []string{"/project/src/core:write:recursive"}) {
		t.Errorf("A's deny = %v (only direct children count)", a.ScopeDeny)
	}
}

// chain registers A→B→C→… each delegating a sub-tree of its parent; holders
// come from the caller so that some can die.
func chain(t *testing.T, f *Registry, holders map[string]holder, links ...string) {
	t.Helper()
	path := "/w"
	parent := ""
	for _, name := range links {
		path += "/" + strings.ToLower(name)
		q := holders[name].request(name, path+":write:recursive")
		q.DelegateFrom = parent
		mustRegister(t, f, q)
		parent = name
	}
}

func TestScopeReleaseHandsScopeBack(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	chain(t, f, map[string]holder{"A": me, "B": me, "D": me}, "A", "B", "D")
	if err := f.Release(context.Background(), "B", me.PID); err != nil {
		t.Fatal(err)
	}
	assertAfterMiddleGone(t, f, me)
}

// assertAfterMiddleGone checks seed 004's partial reclaim of A→B→D once B
// is gone: D is delegated from A, A's deny is D's scope, and the rest of
// B's scope is A's again.
func assertAfterMiddleGone(t *testing.T, f *Registry, me holder) {
	t.Helper()
	reg := readRegistryFile(t, f.Path)
	if got := names(reg); reg.find("B") != nil || reg.find("A") == nil || reg.find("D") == nil {
		t.Fatalf("allocations %v, want A and D without B", got)
	}
	if d := allocationNamed(t, reg, "D"); d.DelegatedFrom != "A" {
		t.Errorf("D delegated from %q, want A", d.DelegatedFrom)
	}
	if a := allocationNamed(t, reg, "A"); !slices.Equal(a.ScopeDeny, []string{"/w/a/b/d:write:recursive"}) {
		t.Errorf("A's deny = %v, want D's scope", a.ScopeDeny)
	}
	// The rest of B's scope is A's: an outsider meets A there, and A can
	// delegate it again.
	_, err := f.Register(context.Background(), me.request("outsider", "/w/a/b/file:write"))
	var conflict *ConflictError
	if !errors.As(err, &conflict) || len(conflict.Competitors) != 1 || conflict.Competitors[0].Name != "A" {
		t.Errorf("outsider on B's old scope: %v, want a conflict with A only", err)
	}
	q := me.request("B2", "/w/a/b/file:write")
	q.DelegateFrom = "A"
	mustRegister(t, f, q)
}

func TestScopeStaleReclaimChainWithDeadMiddle(t *testing.T) {
	f, logs := newRegistry(t)
	me := self(t)
	b := liveProcess(t)
	chain(t, f, map[string]holder{"A": me, "B": *b, "D": me}, "A", "B", "D")
	b.kill(t)

	// Whoever opens the registry next reclaims B.
	mustRegister(t, f, me.request("unrelated", "/elsewhere:write"))
	assertAfterMiddleGone(t, f, me)
	if !strings.Contains(logs.String(), "reclaimed stale scope allocation") || !strings.Contains(logs.String(), `"name":"B"`) {
		t.Errorf("reclaim not logged: %s", logs)
	}
}

func TestScopeStaleReclaimDeeperChain(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	procs := map[string]*holder{"A": liveProcess(t), "B": liveProcess(t), "C": liveProcess(t), "D": liveProcess(t), "E": liveProcess(t), "F": liveProcess(t)}
	holders := map[string]holder{}
	for n, p := range procs {
		holders[n] = *p
	}
	chain(t, f, holders, "A", "B", "C", "D", "E", "F")
	// B and C die (two in a row), and so does the leaf F.
	for _, n := range []string{"B", "C", "F"} {
		procs[n].kill(t)
	}
	mustRegister(t, f, me.request("next", "/elsewhere:write"))

	reg := readRegistryFile(t, f.Path)
	if got := names(reg); !slices.Equal(got, []string{"A", "D", "E", "next"}) {
		t.Fatalf("allocations %v", got)
	}
	wantParent := map[string]string{"A": "", "D": "A", "E": "D"}
	wantDeny := map[string][]string{"A": {"/w/a/b/c/d:write:recursive"}, "D": {"/w/a/b/c/d/e:write:recursive"}, "E": {}}
	for n, p := range wantParent {
		a := allocationNamed(t, reg, n)
		if a.DelegatedFrom != p || !slices.Equal(a.ScopeDeny, wantDeny[n]) {
			t.Errorf("%s: delegated from %q deny %v, want %q %v", n, a.DelegatedFrom, a.ScopeDeny, p, wantDeny[n])
		}
	}
	// F's scope went back to E.
	if !allocationNamed(t, reg, "E").Effective().Contains("/w/a/b/c/d/e/f/x") {
		t.Error("F's scope did not return to E")
	}

	// Now the root dies: D becomes a root and keeps its scope.
	procs["A"].kill(t)
	mustRegister(t, f, me.request("again", "/elsewhere2:write"))
	reg = readRegistryFile(t, f.Path)
	if d := allocationNamed(t, reg, "D"); d.DelegatedFrom != "" || reg.find("A") != nil {
		t.Errorf("after the root died: %+v", reg.Allocations)
	}
	_, err := f.Register(context.Background(), me.request("taker", "/w/a:write:recursive"))
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "D (pid") {
		t.Errorf("taking the dead root's tree: %v, want a conflict with D", err)
	}
	mustRegister(t, f, me.request("taker2", "/w/a/b/other:write:recursive"))
}

func TestScopeStaleWhenPIDReused(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	reused := holder{PID: me.PID, Start: me.Start + 1} // the pid runs, but started at another time
	mustRegister(t, f, reused.request("old", "/p:write:recursive"))
	mustRegister(t, f, me.request("new", "/p:write:recursive"))
	if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"new"}) {
		t.Fatalf("allocations %v, want the reused-pid one reclaimed", got)
	}
}

func TestScopeReleaseMatchesNameAndPID(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	mustRegister(t, f, me.request("mine", "/p:write"))
	if err := f.Release(context.Background(), "mine", me.PID+1); err != nil {
		t.Fatal(err)
	}
	if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"mine"}) {
		t.Fatalf("release with another pid removed it: %v", got)
	}
	if err := f.Release(context.Background(), "mine", me.PID); err != nil {
		t.Fatal(err)
	}
	if err := f.Release(context.Background(), "mine", me.PID); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if got := names(readRegistryFile(t, f.Path)); len(got) != 0 {
		t.Fatalf("allocations %v after release", got)
	}
}

func TestScopeStatusTree(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	dead := liveProcess(t)
	chain(t, f, map[string]holder{"A": me, "B": me}, "A", "B")
	mustRegister(t, f, dead.request("solo", "/solo:write"))
	dead.kill(t)

	nodes, err := f.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].Name != "A" || nodes[1].Name != "solo" {
		t.Fatalf("roots %+v", nodes)
	}
	a := nodes[0]
	if !a.Alive || a.PID != me.PID || len(a.Children) != 1 || a.Children[0].Name != "B" {
		t.Errorf("A %+v", a)
	}
	if got := a.Effective.String(); got != "/w/a:write:recursive except /w/a/b:write:recursive" {
		t.Errorf("A effective %q", got)
	}
	if nodes[1].Alive {
		t.Error("a dead holder shows alive")
	}
	// Status reclaims nothing.
	if got := names(readRegistryFile(t, f.Path)); !slices.Equal(got, []string{"A", "B", "solo"}) {
		t.Errorf("status changed the registry: %v", got)
	}
}
