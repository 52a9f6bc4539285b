package proc

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
)

// Read's fields are the ones after the command name's last ')': the name
// may hold spaces and parentheses (it is the executable's base name).
func TestReadOddCommandName(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(t.TempDir(), "a) b (c")
	if err := os.Symlink(sleep, odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
	want := Process{Pid: cmd.Process.Pid, PPid: os.Getpid(), Pgrp: cmd.Process.Pid, State: rest[0][0]}
	want.StartTime, _ = strconv.ParseUint(rest[22-3], 10, 64)
	got, err := Read(cmd.Process.Pid)
	if err != nil || got != want {
		t.Fatalf("Read = %+v, %v; want %+v (%s)", got, err, want, line)
	}
}

func TestLive(t *testing.T) {
	self, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	defer zombie.Wait()
	waitState(t, zombie.Process.Pid, 'Z')
	tests := []struct {
		name  string
		pid   int
		start uint64
		want  Liveness
	}{
		{"self", self.Pid, self.StartTime, Alive},
		{"self, start unknown", self.Pid, 0, Alive},
		{"self, other start", self.Pid, self.StartTime + 1, Reused},
		{"reaped", reaped.Process.Pid, 0, Dead},
		{"zombie", zombie.Process.Pid, 0, Dead},
		{"pid 0", 0, 0, Dead},
		{"init", 1, 0, Alive},
	}
	for _, tt := range tests {
		if got := Live(tt.pid, tt.start); got != tt.want {
			t.Errorf("%s: Live(%d, %d) = %v, want %v", tt.name, tt.pid, tt.start, got, tt.want)
		}
	}
	if _, err := Read(reaped.Process.Pid); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a reaped pid: %v, want fs.ErrNotExist", err)
	}
}

func waitState(t *testing.T, pid int, state byte) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err := Read(pid)
		if err == nil && p.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never reached state %c (%+v, %v)", pid, state, p, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBootIDAndNamespace(t *testing.T) {
	boot, err := BootID()
	if err != nil || len(boot) != 36 {
		t.Fatalf("boot id %q (%v), want 36 characters", boot, err)
	}
	ns, err := PidNamespace()
	if err != nil || ns == 0 {
		t.Fatalf("pid namespace %d (%v)", ns, err)
	}
}

// A shell's background child and its setsid'd grandchild are descendants;
// the group lists the ones that stayed in it; Holding finds every process
// that has an inherited file open, the setsid'd one included.
func TestDescendantsGroupHolding(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "tree")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sh := exec.Command("sh", "-c", `sleep 300 & setsid sleep 300 & echo ready; wait`)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sh.ExtraFiles = []*os.File{f}
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The setsid'd sleep has left sh's group: KILL it by pid, or it
		// outlives the test by five minutes.
		if ds, err := Descendants(sh.Process.Pid); err == nil {
			for _, p := range ds {
				syscall.Kill(p.Pid, syscall.SIGKILL)
			}
		}
		syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
		sh.Wait()
	}()
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	// Wait until both have settled: one has called setsid (its own group),
	// the other stays in sh's, and neither is running or in the middle of an
	// exec (R or D). Reading the state once they are merely "not R" saw the
	// setsid'd one in D, before its setsid(2).
	var ds []Process
	var setsid, inGroup int
	settled := testwait.Until(10*time.Second, func() bool {
		ds, err = Descendants(sh.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		setsid, inGroup = 0, 0
		all := len(ds) == 2
		for _, p := range ds {
			if p.State != 'S' {
				all = false
			}
			if p.Pgrp == p.Pid {
				setsid = p.Pid
			} else if p.Pgrp == sh.Process.Pid {
				inGroup = p.Pid
			}
		}
		return all && setsid != 0 && inGroup != 0
	})
	if !settled {
		t.Fatalf("descendants %+v: want two sleeping sleeps, one setsid'd, one in sh's group", ds)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, p := range all {
		if p.Pgrp == sh.Process.Pid {
			pids = append(pids, p.Pid)
		}
	}
	slices.Sort(pids)
	if want := []int{sh.Process.Pid, inGroup}; !slices.Equal(pids, sortedInts(want)) {
		t.Errorf("group members %v, want %v", pids, sortedInts(want))
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	holding, err := Holding(FileID{Dev: uint64(st.Dev), Ino: st.Ino})
	if err != nil {
		t.Fatal(err)
	}
	want := sortedInts([]int{os.Getpid(), sh.Process.Pid, inGroup, setsid})
	slices.Sort(holding)
	if !slices.Equal(holding, want) {
		t.Errorf("Holding = %v, want %v (self, sh, both sleeps)", holding, want)
	}
}

func sortedInts(s []int) []int { slices.Sort(s); return s }
