package oneproc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/withlock/withlock/internal/testenv"
)

// In a process started with GOMAXPROCS=3, the package has set 1 by the time
// anything else runs, remembers 3 as Default, and Restore gives 3 back.
func TestDefaultIsWhatTheRuntimeChose(t *testing.T) {
	if os.Getenv("ONEPROC_CHILD") == "1" {
		before := runtime.GOMAXPROCS(0)
		Restore()
		os.Stdout.WriteString(strconv.Itoa(before) + " " + strconv.Itoa(Default) + " " + strconv.Itoa(runtime.GOMAXPROCS(0)) + "\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultIsWhatTheRuntimeChose$")
	cmd.Env = append(os.Environ(), "ONEPROC_CHILD=1", "GOMAXPROCS=3", "GORACE="+testenv.GORACE())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 3 || fields[0] != "1" || fields[1] != "3" || fields[2] != "3" {
		t.Fatalf("child printed %q; want GOMAXPROCS 1 during the run, Default 3, and 3 after Restore", out)
	}
}
