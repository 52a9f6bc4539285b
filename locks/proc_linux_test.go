package locks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

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
