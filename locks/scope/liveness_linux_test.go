package scope

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// TestListPresentAnswersAsKill: the /proc listing a start with many holders
// uses answers "does this pid run" exactly as the seed's kill(pid, 0): for
// every listed pid, this process's threads (not listed: kill answers),
// a reaped child, pids around them that no process has, and 0 and -1.
func TestListPresentAnswersAsKill(t *testing.T) {
	dead := deadProcess(t)
	listed := listPresent()
	if listed == nil || !slices.Contains(listed, os.Getpid()) || !slices.Contains(listed, 1) {
		t.Fatalf("listPresent() = %d pids, without this process or init: the listing is not used", len(listed))
	}
	pids := append([]int{0, -1, dead.PID, os.Getpid()}, listed...)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		pids = append(pids, tid)
	}
	for _, pid := range slices.Clone(pids) {
		for d := 1; d <= 3; d++ {
			pids = append(pids, pid+d, pid-d)
		}
	}
	differ := 0
	for _, pid := range pids {
		if got, want := listed.present(pid), pidPresent(pid); got != want {
			// A listed process may end between the listing and the kill.
			if !(got && !want && slices.Contains(listed, pid)) {
				t.Errorf("pid %d: listing says present %v, kill(pid, 0) %v", pid, got, want)
			}
			differ++
		}
	}
	if differ > 10 {
		t.Errorf("%d of %d pids differ", differ, len(pids))
	}
	if listed.present(dead.PID) {
		t.Errorf("the reaped child %d is present by the listing", dead.PID)
	}
}

func TestAppendDirentPIDs(t *testing.T) {
	record := func(name string) []byte {
		reclen := (19 + len(name) + 1 + 7) &^ 7
		b := make([]byte, reclen)
		b[16], b[17] = byte(reclen), byte(reclen>>8)
		copy(b[19:], name)
		return b
	}
	var buf []byte
	for _, name := range []string{".", "..", "1", "self", "42", "12a", "0", "99999999999", "4194304", "sys"} {
		buf = append(buf, record(name)...)
	}
	if got := appendDirentPIDs(nil, buf); !slices.Equal(got, presentPIDs{1, 42, 4194304}) {
		t.Errorf("pids %v, want [1 42 4194304]", got)
	}
}

// TestReclaimWithManyHoldersUsesTheListing: with more holders than
// listPresentAt, a start still reclaims exactly the dead ones (one of
// them among hundreds alive) and keeps a holder named by a thread id,
// which the listing does not show and kill(pid, 0) finds.
func TestReclaimWithManyHoldersUsesTheListing(t *testing.T) {
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
	for i := range listPresentAt + 10 {
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
	if got.find("dead") != nil || got.find("thread") == nil || got.find("new") == nil || len(got.Allocations) != listPresentAt+10+2 {
		t.Errorf("after a start: %d allocations, dead %v, thread %v", len(got.Allocations), got.find("dead") != nil, got.find("thread") != nil)
	}
}
