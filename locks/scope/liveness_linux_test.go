package scope

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestScopeProcessAlive(t *testing.T) {
	me := self(t)
	dead := deadProcess(t)
	tests := []struct {
		name  string
		pid   int
		start uint64
		alive bool
	}{
		{"self", me.PID, me.Start, true},
		{"self, start unknown", me.PID, 0, true},
		{"self, other start: pid reused", me.PID, me.Start + 1, false},
		{"reaped process", dead.PID, dead.Start, false},
		{"reaped process, start unknown", dead.PID, 0, false},
		{"pid 0 is no holder", 0, 0, false},
		{"negative pid is no holder", -1, 0, false},
		{"init (EPERM for non-root means alive)", 1, 0, true},
	}
	for _, tt := range tests {
		if got := processAlive(tt.pid, tt.start); got != tt.alive {
			t.Errorf("%s: processAlive(%d, %d) = %v, want %v", tt.name, tt.pid, tt.start, got, tt.alive)
		}
	}
}

// TestScopeZombieHolderIsDead: a holder that exited but was not reaped yet
// will never release; it counts as dead.
func TestScopeZombieHolderIsDead(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// The state is the first field after the command name's ')'.
		state := stat[bytes.LastIndexByte(stat, ')')+2]
		if state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never became a zombie (state %c)", state)
		}
		time.Sleep(time.Millisecond)
	}
	if processAlive(cmd.Process.Pid, 0) {
		t.Fatal("a zombie counts as alive")
	}
}

// TestReclaimWithManyHolders: a start reclaims exactly the dead ones (one
// of them among hundreds alive) and keeps a holder named by a thread id,
// which kill(pid, 0) finds.
func TestReclaimWithManyHolders(t *testing.T) {
	me := self(t)
	dead := deadProcess(t)
	tasks, _ := os.ReadDir("/proc/self/task")
	tid := 0
	for _, task := range tasks {
		if n, _ := strconv.Atoi(task.Name()); n != me.PID {
			tid = n
			break
		}
	}
	if tid == 0 {
		t.Fatal("no thread besides the main one")
	}
	reg := &Table{}
	for i := range 300 {
		reg.Allocations = append(reg.Allocations, Allocation{Name: "h" + strconv.Itoa(i), PID: me.PID, ScopeAllow: []string{"/many/" + strconv.Itoa(i) + ":write"}})
	}
	reg.Allocations = append(reg.Allocations,
		Allocation{Name: "dead", PID: dead.PID, ScopeAllow: []string{"/many/dead:write"}},
		Allocation{Name: "thread", PID: tid, ScopeAllow: []string{"/many/thread:write"}})
	f := &Registry{Path: filepath.Join(t.TempDir(), "scope.lock")}
	if err := os.WriteFile(f.Path, reg.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, f, me.request("new", "/elsewhere:write"))
	got := readRegistryFile(t, f.Path)
	if got.find("dead") != nil || got.find("thread") == nil || got.find("new") == nil || len(got.Allocations) != 300+2 {
		t.Errorf("after a start: %d allocations, dead %v, thread %v", len(got.Allocations), got.find("dead") != nil, got.find("thread") != nil)
	}
}
