package earlysig

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/cmd/withlock/internal/oneproc"
)

func TestApplies(t *testing.T) {
	cases := []struct {
		args []string
		env  string
		want bool
	}{
		{[]string{"withlock", "run", "x", "--", "true"}, "", true},
		{[]string{"withlock", "scope", "--allow", "/a:write", "--", "true"}, "file", true},
		{[]string{"withlock", "run", "--backend", "etcd", "x", "--", "true"}, "", false},
		{[]string{"withlock", "run", "--backend=file", "x", "--", "true"}, "", false},
		{[]string{"withlock", "run", "x", "--", "cmd", "--backend", "etcd"}, "", true},
		{[]string{"withlock", "run", "x", "--", "true"}, "etcd", false},
		{[]string{"withlock", "status"}, "", false},
		{[]string{"withlock"}, "", false},
	}
	for _, c := range cases {
		if got := Applies(c.args, c.env); got != c.want {
			t.Errorf("Applies(%q, %q) = %v, want %v", c.args, c.env, got, c.want)
		}
	}
}

// A blocked signal on the thread (so, at start-up, in the process) means
// main is about to re-exec: nothing may be subscribed before that.
func TestMaskClear(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !maskClear() {
		t.Fatal("maskClear() = false with nothing blocked")
	}
	var set, old unix.Sigset_t
	set.Val[(unix.SIGUSR2-1)/64] |= 1 << ((unix.SIGUSR2 - 1) % 64)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		t.Fatal(err)
	}
	clear := maskClear()
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil); err != nil {
		t.Fatal(err)
	}
	if clear {
		t.Error("maskClear() = true with SIGUSR2 blocked")
	}
	start([]string{"withlock", "run", "x", "--", "true"}, "")
	defer func() { pending = nil }()
	if pending == nil {
		t.Fatal("start did not subscribe for `withlock run` with a clear mask")
	}
}

// What start begins is a working subscription: a signal sent to the process
// arrives on it. A test binary's own arguments start nothing.
func TestTake(t *testing.T) {
	if Take() != nil {
		t.Fatal("a subscription was started for the test binary's arguments")
	}
	start([]string{"withlock", "scope", "--allow", "/a:write", "--", "true"}, "")
	defer func() { pending = nil }()
	s := Take()
	if s == nil {
		t.Fatal("Take() = nil after start for `withlock scope`")
	}
	defer s.Stop()
	expect := func(sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-s.C():
			if got != sig {
				t.Fatalf("got %v, want %v", got, sig)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v sent to self never arrived on the early subscription", sig)
		}
	}
	expect(syscall.SIGUSR2)
	expect(syscall.SIGWINCH)
	s.Complete()
	if err := syscall.Kill(os.Getpid(), syscall.SIGCHLD); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Chld():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGCHLD sent to self never arrived after Complete")
	}
}

// A command that is not pinned gets the runtime's GOMAXPROCS back from
// oneproc's 1; run and scope keep 1 (cpupin). The test starts from a value
// that is neither, so it tells the two apart on a machine with one CPU too.
func TestStartRestoresGOMAXPROCSForOtherCommands(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(oneproc.Default + 1)
	start([]string{"withlock", "status"}, "")
	if got := runtime.GOMAXPROCS(0); got != oneproc.Default {
		t.Errorf("GOMAXPROCS = %d after start(status), want the runtime's %d", got, oneproc.Default)
	}
	if pending != nil {
		t.Error("start(status) subscribed")
	}
}
