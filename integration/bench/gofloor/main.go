//go:build linux

// Command gofloor is the smallest lock wrapper Go allows: the bench's
// "go-floor" peer. Next to flock(1), a C program, it shows what any Go
// binary costs here (runtime start-up, a static binary's page-ins), so
// withlock's ratio to flock can be read against that floor.
//
//	gofloor FILE COMMAND [ARG...]
//
// It opens FILE (created if need be), takes an exclusive flock on it,
// waiting as long as it takes, runs COMMAND (looked up in PATH) in its own
// process group, waits for it and exits with its status, 128+N when it was
// killed by signal N. Nothing else: no signal forwarding, no logging,
// standard library only. Exits 1 when the lock cannot be taken, 126 or 127
// when COMMAND cannot be run (as flock(1) does).
//
//	gofloor -signals FILE COMMAND [ARG...]
//
// does the same and also handles every catchable signal, as SPEC §5 asks
// of withlock: it subscribes to them all (os/signal) before it takes the
// lock and forwards each to the command's group once it runs (one that
// arrives during the wait is forwarded then; withlock would end the wait
// instead). Go subscribes one signal at a time, each a round trip to its
// signal thread; this is the floor of a Go wrapper that keeps §5, which
// the bench reports next to withlock.
package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run(os.Args)) }

func run(args []string) int {
	var sigs chan os.Signal
	if len(args) > 1 && args[1] == "-signals" {
		sigs = make(chan os.Signal, 64)
		signal.Notify(sigs, catchable()...)
		args = args[1:]
	}
	if len(args) < 3 {
		os.Stderr.WriteString("usage: gofloor [-signals] FILE COMMAND [ARG...]\n")
		return 2
	}
	fd, err := syscall.Open(args[1], syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o666)
	if err != nil {
		return fail(args[1], err, 1)
	}
	for {
		if err = syscall.Flock(fd, syscall.LOCK_EX); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return fail(args[1], err, 1)
	}
	path, err := exec.LookPath(args[2])
	if err != nil {
		return fail(args[2], err, 127)
	}
	pid, err := syscall.ForkExec(path, args[2:], &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		code := 126
		if errors.Is(err, syscall.ENOENT) {
			code = 127
		}
		return fail(path, err, code)
	}
	if sigs != nil {
		go func() {
			for sig := range sigs {
				_ = syscall.Kill(-pid, sig.(syscall.Signal))
			}
		}()
	}
	var ws syscall.WaitStatus
	for {
		if _, err = syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	switch {
	case err != nil:
		return fail("wait", err, 1)
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func fail(what string, err error, code int) int {
	os.Stderr.WriteString("gofloor: " + what + ": " + err.Error() + "\n")
	return code
}

// catchable is every standard signal a process can catch, less CHLD,
// which a supervisor reaps rather than forwards, and the two Go's runtime
// keeps (URG for preemption, PROF for profiling): the set withlock
// subscribes to.
func catchable() []os.Signal {
	var sigs []os.Signal
	for n := syscall.Signal(1); n < 32; n++ {
		switch n {
		case syscall.SIGKILL, syscall.SIGSTOP, syscall.SIGCHLD, syscall.SIGURG, syscall.SIGPROF:
			continue
		}
		sigs = append(sigs, n)
	}
	return sigs
}
