package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/supervisor"
)

// maskRole plays two parts. "mask-block" blocks USR1 and TERM on its thread
// and execs the test binary again as "mask-run": that process starts with
// those signals blocked, as withlock does under a job runner that blocks
// them. "mask-run" calls ResetSignalMask (unless MASK_NO_RESET is set) and
// then supervises `grep SigBlk /proc/self/status`, whose output is the
// child's blocked mask.
func maskRole(role string) int {
	switch role {
	case "mask-block":
		runtime.LockOSThread()
		var set unix.Sigset_t
		for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM} {
			set.Val[(s-1)/64] |= 1 << ((uint(s) - 1) % 64)
		}
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 99
		}
		var env []string // the role must change: the first of two equal keys wins
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, roleEnv+"=") {
				env = append(env, kv)
			}
		}
		env = append(env, roleEnv+"=mask-run")
		err := syscall.Exec(os.Args[0], os.Args, env)
		fmt.Fprintln(os.Stderr, "exec:", err)
		return 99
	case "mask-run":
		if os.Getenv("MASK_NO_RESET") == "" {
			if err := supervisor.ResetSignalMask(); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 99
			}
		}
		res, err := supervisor.Run(context.Background(), supervisor.Config{Argv: []string{"grep", "SigBlk", "/proc/self/status"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 99
		}
		return res.Status
	}
	return 99
}

func childMask(t *testing.T, reset bool) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=mask-block")
	if !reset {
		cmd.Env = append(cmd.Env, "MASK_NO_RESET=1")
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mask helper: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestResetSignalMaskClearsInheritedBlocks(t *testing.T) {
	if got := childMask(t, true); got != "SigBlk:\t0000000000000000" {
		t.Fatalf("child of a withlock started with USR1+TERM blocked: %q, want nothing blocked", got)
	}
}

// Negative control: without the reset the blocked signals reach the child,
// so the test above can fail.
func TestInheritedSignalMaskWithoutReset(t *testing.T) {
	if got := childMask(t, false); got == "SigBlk:\t0000000000000000" {
		t.Fatalf("without ResetSignalMask the child's mask is empty (%q): this test cannot tell", got)
	}
}
