package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/filelock"
)

// status lists every slot holder under the user's run id with its slot,
// and sums the semaphore up with its holder and waiter counts.
func TestStatusSemaphore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	r, err := filelock.NewRunLocker(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := r.AcquireSlot(context.Background(), "b", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := r.AcquireSlot(context.Background(), "b", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	ctx, cancel := context.WithCancel(context.Background())
	waiterDone := make(chan struct{})
	go func() {
		defer close(waiterDone)
		if l, err := r.AcquireSlot(ctx, "b", 2, -1); err == nil {
			l.Release()
		}
	}()
	defer func() { cancel(); <-waiterDone }()
	deadline := time.Now().Add(10 * time.Second)
	for n, _ := r.WaitersOf("b"); n != 1; n, _ = r.WaitersOf("b") {
		if time.Now().After(deadline) {
			t.Fatal("the waiter is not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, named := range [][]string{nil, {"b"}} {
		st := gatherStatus(r, named, filepath.Join(dir, "scope.lock"))
		want := semStatus{RunID: "b", Mode: "max", Max: 2, Holders: 2, Waiters: 1, WaitersKnown: true}
		if len(st.Semaphores) != 1 || st.Semaphores[0] != want {
			t.Errorf("status %v: semaphores %+v, want [%+v]", named, st.Semaphores, want)
		}
		slots := map[int]bool{}
		for _, l := range st.Locks {
			if l.Slot >= 0 {
				if l.RunID != "b" || l.Mode != "max" || l.Max != 2 || l.State != "held" {
					t.Errorf("slot entry %+v", l)
				}
				slots[l.Slot] = true
			}
		}
		if !slots[0] || !slots[1] {
			t.Errorf("status %v: slots %v, want 0 and 1", named, slots)
		}
		data, _ := json.Marshal(st)
		if strings.Contains(string(data), `\u0000`) {
			t.Errorf("a derived run id leaked into the JSON: %s", data)
		}
		var out bytes.Buffer
		writeStatusTable(&out, st)
		for _, s := range []string{"b [slot 0 of 2]", "b [slot 1 of 2]", "semaphores and shared locks (1):", "max 2"} {
			if !strings.Contains(out.String(), s) {
				t.Errorf("table lacks %q:\n%s", s, out.String())
			}
		}
	}
}
