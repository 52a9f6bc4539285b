package locks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
		if got := scopeProcessAlive(tt.pid, tt.start); got != tt.alive {
			t.Errorf("%s: scopeProcessAlive(%d, %d) = %v, want %v", tt.name, tt.pid, tt.start, got, tt.alive)
		}
	}
	if _, start, err := procStat(me.PID); err != nil || start != me.Start {
		t.Errorf("procStat start %d, %v; ProcessStartTime says %d", start, err, me.Start)
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
		state, _, err := procStat(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never became a zombie (state %c)", state)
		}
		time.Sleep(time.Millisecond)
	}
	if scopeProcessAlive(cmd.Process.Pid, 0) {
		t.Fatal("a zombie counts as alive")
	}
}

// TestProcStatOddCommandName: the command name may hold spaces and
// parentheses (it is the executable's base name); the state and start
// time are still the fields after the last ')', as a plain split of the
// rest of the line gives them.
func TestProcStatOddCommandName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	odd := filepath.Join(t.TempDir(), "a) b (c")
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	line, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(line), "(a) b (c)") {
		t.Fatalf("command name not as expected: %s", line)
	}
	rest := strings.Fields(string(line[strings.LastIndexByte(string(line), ')')+1:]))
	wantStart, err := strconv.ParseUint(rest[22-3], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	state, start, err := procStat(cmd.Process.Pid)
	if err != nil || state != rest[0][0] || start != wantStart {
		t.Fatalf("procStat = %c, %d, %v; want %c, %d (%s)", state, start, err, rest[0][0], wantStart, line)
	}
}
