package supervisor_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/supervisor"
)

// maskRole plays two parts. "mask-block" blocks the signals listed in
// MASK_BLOCK on its thread and execs the test binary again as "mask-run":
// that process starts with those signals blocked, as withlock does under a
// job runner that blocks them. "mask-run" supervises
// `grep SigBlk /proc/self/status`, whose output is the child's blocked mask.
func maskRole(role string) int {
	switch role {
	case "mask-block":
		runtime.LockOSThread()
		var set unix.Sigset_t
		for _, f := range strings.Fields(os.Getenv("MASK_BLOCK")) {
			n, err := strconv.Atoi(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "MASK_BLOCK:", err)
				return 99
			}
			set.Val[(n-1)/64] |= 1 << ((uint(n) - 1) % 64)
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
		res, err := supervisor.Run(context.Background(), supervisor.Config{Argv: []string{"grep", "SigBlk", "/proc/self/status"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 99
		}
		return res.Status
	}
	return 99
}

// childMask returns the blocked mask of a child of a supervisor started
// with block blocked.
func childMask(t *testing.T, block ...syscall.Signal) uint64 {
	t.Helper()
	var nums []string
	for _, s := range block {
		nums = append(nums, strconv.Itoa(int(s)))
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=mask-block", "MASK_BLOCK="+strings.Join(nums, " "))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mask helper: %v\n%s", err, out)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "SigBlk:")
	if !ok {
		t.Fatalf("child printed %q, want a SigBlk line", out)
	}
	m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func maskOf(sigs ...syscall.Signal) uint64 {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (uint(s) - 1)
	}
	return m
}

// TestChildInheritsSignalMask: the command starts with the signals blocked
// that withlock was started with blocked (as under flock and tini), read
// from the child's /proc/<pid>/status, for every signal the Go runtime lets
// a program keep blocked. The others it unblocks on every thread it runs,
// the forking one included, before withlock's code runs, so a child starts
// with them unblocked: those whose default Go action is to exit or crash
// (HUP, INT, QUIT, TERM, ILL, TRAP, ABRT, BUS, FPE, SEGV, STKFLT, SYS) and
// CHLD and PROF.
func TestChildInheritsSignalMask(t *testing.T) {
	if got := childMask(t); got != 0 {
		t.Fatalf("control: a child of a supervisor started with nothing blocked has SigBlk %016x, want 0", got)
	}
	kept := []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
		syscall.SIGWINCH, syscall.SIGTSTP, syscall.SIGXFSZ, syscall.SIGIO}
	opened := []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGCHLD}
	if got, want := childMask(t, append(kept, opened...)...), maskOf(kept...); got != want {
		t.Errorf("child of a supervisor started with %v and %v blocked: SigBlk %016x, want %016x (the first list)",
			kept, opened, got, want)
	}
}
