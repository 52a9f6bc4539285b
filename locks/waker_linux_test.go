package locks

import (
	"context"
	"os/exec"
	"testing"
	"time"
)

// A holder already gone and reaped when its pidfd is asked for wakes the
// waiter at once, as its pidfd would have (not at the safety poll).
func TestWaitForReapedHolderReturnsAtOnce(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	w := newWaker(context.Background(), t.TempDir(), "x.lock")
	defer w.Close()
	start := time.Now()
	w.Wait(time.Minute, cmd.Process.Pid)
	if d := time.Since(start); d > eventWake {
		t.Fatalf("Wait on a reaped holder took %v, want at once", d)
	}
}
