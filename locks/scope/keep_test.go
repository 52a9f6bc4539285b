package scope

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// removeByHand drops the named allocation from the registry the way an
// operator's edit or another program would: nothing re-parented, nothing
// recomputed.
func removeByHand(t *testing.T, f *Registry, name string) {
	t.Helper()
	data, err := os.ReadFile(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := DecodeTable(data)
	if err != nil {
		t.Fatal(err)
	}
	kept := tab.Allocations[:0]
	for _, a := range tab.Allocations {
		if a.Name != name {
			kept = append(kept, a)
		}
	}
	tab.Allocations = kept
	writeKeepingInode(t, f.Path, tab.Encode())
}

func TestKeepPutsBackAMissingAllocation(t *testing.T) {
	f, _ := newRegistry(t)
	ctx := context.Background()
	a := mustRegister(t, f, self(t).request("a", "/a:write:recursive"))
	stamp, restored, err := f.Keep(ctx, &a, Stamp{})
	if err != nil || restored {
		t.Fatalf("keep of a present allocation = %v, %v", restored, err)
	}
	removeByHand(t, f, "a")
	if _, err := f.Register(ctx, self(t).request("", "/other:write")); err != nil {
		t.Fatal(err) // a start in between: it must not disturb a's comeback
	}
	_, restored, err = f.Keep(ctx, &a, stamp)
	if err != nil || !restored {
		t.Fatalf("keep after the removal = %v, %v; want it put back", restored, err)
	}
	got := allocationNamed(t, readRegistryFile(t, f.Path), "a")
	if got.CreatedAt != a.CreatedAt || got.PIDStart != a.PIDStart || !slicesEqual(got.ScopeAllow, a.ScopeAllow) {
		t.Fatalf("put back as %+v, was %+v", got, a)
	}
	if _, err := f.Register(ctx, self(t).request("b", "/a/x:write")); !errors.Is(err, ErrConflict) {
		t.Fatalf("a writer over the put-back allocation = %v, want a conflict", err)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

// TestKeepLostWhenTaken: while the allocation was missing another writer
// took part of its scope; it cannot be put back, and the error names the
// one in the way.
func TestKeepLostWhenTaken(t *testing.T) {
	f, _ := newRegistry(t)
	ctx := context.Background()
	a := mustRegister(t, f, self(t).request("a", "/a:write:recursive"))
	removeByHand(t, f, "a")
	mustRegister(t, f, liveProcess(t).request("taker", "/a/x:write"))
	_, _, err := f.Keep(ctx, &a, Stamp{})
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "taker") {
		t.Fatalf("keep = %v, want ErrLost naming taker", err)
	}
	if names := names(readRegistryFile(t, f.Path)); slicesEqual(names, []string{"taker", "a"}) {
		t.Fatal("a lost allocation was written back")
	}
}

// TestKeepRebuildsTheTreeAfterAReset: after `break --scopes` every live holder
// of a delegation chain puts itself back, in any order, and the tree is
// whole again: the parent's deny is the child's allow.
func TestKeepRebuildsTheTreeAfterAReset(t *testing.T) {
	f, _ := newRegistry(t)
	ctx := context.Background()
	me := self(t)
	parent := mustRegister(t, f, me.request("parent", "/p:write:recursive"))
	q := me.request("child", "/p/c:write:recursive")
	q.DelegateFrom = "parent"
	child := mustRegister(t, f, q)
	if err := os.Remove(f.Path); err != nil { // what reset leaves: no registry
		t.Fatal(err)
	}
	for _, a := range []*Allocation{&child, &parent} {
		if _, restored, err := f.Keep(ctx, a, Stamp{}); err != nil || !restored {
			t.Fatalf("keep %s = %v, %v", a.Name, restored, err)
		}
	}
	reg := readRegistryFile(t, f.Path)
	if got := allocationNamed(t, reg, "parent").ScopeDeny; !slicesEqual(got, child.ScopeAllow) {
		t.Fatalf("parent's deny %v, want the child's allow %v", got, child.ScopeAllow)
	}
	if got := allocationNamed(t, reg, "child").DelegatedFrom; got != "parent" {
		t.Fatalf("child delegated from %q", got)
	}
	for _, over := range []string{"/p/c/x:write", "/p/y:write"} {
		if _, err := f.Register(ctx, me.request("", over)); !errors.Is(err, ErrConflict) {
			t.Fatalf("a writer of %s after the tree came back = %v, want a conflict", over, err)
		}
	}
}

// TestKeepWhileUnchangedIsCheap: with the stamp of its last check and the
// registry file unchanged, Keep does not even take the flock — here held
// by a stuck process — and a changed file is read again.
func TestKeepWhileUnchangedIsCheap(t *testing.T) {
	f, _ := newRegistry(t)
	ctx := context.Background()
	a := mustRegister(t, f, self(t).request("a", "/a:write"))
	stamp, _, err := f.Keep(ctx, &a, Stamp{})
	if err != nil {
		t.Fatal(err)
	}
	stuck := flockFile(t, f.Path)
	f.LockWait = 100 * time.Millisecond
	if got, _, err := f.Keep(ctx, &a, stamp); err != nil || got != stamp {
		t.Fatalf("keep with an unchanged registry = %v, %v; want no read", got, err)
	}
	if _, _, err := f.Keep(ctx, &a, Stamp{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("keep without a stamp = %v, want it to wait for the flock (ErrBusy)", err)
	}
	stuck.Close()
	f.LockWait = 5 * time.Second
	removeByHand(t, f, "a")
	if _, restored, err := f.Keep(ctx, &a, stamp); err != nil || !restored {
		t.Fatalf("keep with a stale stamp after a change = %v, %v; want it put back", restored, err)
	}
}
