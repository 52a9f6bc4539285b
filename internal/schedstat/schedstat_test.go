package schedstat

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// The figure grows while this process works: spin until it has grown by
// 10 ms, with a deadline (on a busy machine the spin gets less CPU than
// wall time, so the wait is on the counter, not on the clock).
func TestCPUGrowsWithWork(t *testing.T) {
	before, ok := CPU(os.Getpid())
	if !ok {
		t.Fatal("no schedstat for this process")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		now, ok := CPU(os.Getpid())
		if !ok {
			t.Fatal("schedstat vanished")
		}
		if now-before >= 10*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s of spinning charged only %v", now-before)
		}
	}
}

func TestCPUOfAGoneProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, ok := CPU(cmd.Process.Pid); ok {
		t.Fatal("a reaped process still has a CPU figure")
	}
}
