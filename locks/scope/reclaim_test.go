package scope

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A start judges in full (zombie, start time) only the holders that concern
// it; every other holder gets kill(pid, 0). A reused pid that overlaps
// nothing asked for stays, one that stands in the way is reclaimed, and a
// dead pid is reclaimed whatever it holds.
func TestScopeStartJudgesOnlyWhatConcernsIt(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	reused := holder{PID: me.PID, Start: me.Start + 1} // the pid runs, but started at another time
	dead := deadProcess(t)
	mustRegister(t, f, reused.request("reused-elsewhere", "/elsewhere:write:recursive"))
	mustRegister(t, f, reused.request("reused-in-the-way", "/p/q:write"))
	mustRegister(t, f, dead.request("dead-elsewhere", "/far:write:recursive"))
	mustRegister(t, f, me.request("live-elsewhere", "/other:write:recursive"))

	mustRegister(t, f, me.request("new", "/p:write:recursive"))
	got := names(readRegistryFile(t, f.Path))
	if want := []string{"reused-elsewhere", "live-elsewhere", "new"}; !slices.Equal(got, want) {
		t.Fatalf("allocations %v, want %v: the reused pid in the way and the dead pid reclaimed, the reused pid elsewhere kept", got, want)
	}
	// Once a start concerns it, the reused pid goes too.
	mustRegister(t, f, me.request("newer", "/elsewhere/x:write"))
	got = names(readRegistryFile(t, f.Path))
	if want := []string{"live-elsewhere", "new", "newer"}; !slices.Equal(got, want) {
		t.Fatalf("allocations %v, want %v", got, want)
	}
}

// Which holders a start asks about, and how: with the start time only the
// name asked for, the parent and the overlapping ones; the others with
// start 0 (does the pid run). 200 holders, 3 of which concern the start.
func TestScopeStartAsksStartTimeOnlyOfConcerned(t *testing.T) {
	f, _ := newRegistry(t)
	var mu sync.Mutex
	full := map[string]bool{} // names judged with their start time
	cheap := 0
	byPID := map[int]string{}
	f.Alive = func(pid int, start uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		if start == 0 {
			cheap++
		} else {
			full[byPID[pid]] = true
		}
		return true
	}
	reg := &Table{}
	for i := range 200 {
		name := fmt.Sprintf("h%03d", i)
		path := fmt.Sprintf("/tree/%03d:write:recursive", i)
		switch i {
		case 10:
			path = "/p/x/y:write" // an entry of /p/x: overlaps the request
		case 11:
			path = "/p/xy:write:recursive" // a sibling of /p/x: no overlap
		case 20:
			name = "parent"
			path = "/p:read:recursive" // the parent; a read scope
		case 30:
			path = "/p:read" // /p and its entries, /p/x among them
		}
		pid := 1000 + i
		byPID[pid] = name
		reg.Allocations = append(reg.Allocations, Allocation{Name: name, PID: pid, PIDStart: 7, ScopeAllow: []string{path}, ScopeDeny: []string{}})
	}
	writeTable(t, f, reg)
	q := Request{Name: "new", PID: 99, PIDStart: 5, Allow: mustSpecs([]string{"/p/x:read"}), DelegateFrom: "parent"}
	if _, err := f.Register(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"h010": true, "parent": true, "h030": true}; !mapsEqual(full, want) {
		t.Errorf("judged with the start time: %v, want %v", full, want)
	}
	if cheap != 197 {
		t.Errorf("%d holders asked only whether the pid runs, want 197", cheap)
	}
}

// A reused pid as the parent is no parent; a reused pid holding part of the
// parent's scope no longer holds it.
func TestScopeStartJudgesParentAndItsChildren(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	reused := holder{PID: me.PID, Start: me.Start + 1}
	mustRegister(t, f, me.request("A", "/w:write:recursive"))
	child := reused.request("B", "/w/b:write:recursive")
	child.DelegateFrom = "A"
	mustRegister(t, f, child)
	q := me.request("C", "/w/b/c:write")
	q.DelegateFrom = "A"
	mustRegister(t, f, q) // B's pid is reused: its part of A is A's again
	if a := allocationNamed(t, readRegistryFile(t, f.Path), "A"); !slices.Equal(a.ScopeDeny, []string{"/w/b/c:write"}) {
		t.Errorf("A's deny %v, want C's scope only", a.ScopeDeny)
	}

	mustRegister(t, f, reused.request("P", "/v:write:recursive"))
	q = me.request("D", "/v/d:write")
	q.DelegateFrom = "P"
	_, err := f.Register(context.Background(), q)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `unknown scope parent "P"`) {
		t.Errorf("delegating from a reused pid: %v, want unknown parent", err)
	}
}

func writeTable(t *testing.T, f *Registry, reg *Table) {
	t.Helper()
	if err := f.Transform(context.Background(), func(t *Table) error {
		*t = *reg
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
