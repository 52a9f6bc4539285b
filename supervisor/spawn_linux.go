package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// spawnMode says which process group the child starts in.
type spawnMode struct {
	term   *terminal // the child's new group takes this terminal; nil: none
	shared bool      // the child stays in withlock's group, its caller's
}

// spawn starts the child and returns its pid, which is also its process
// group id unless mode.shared keeps it in withlock's. It does not wait for
// it: the supervision loop reaps it. cfg's Stdin, Stdout and Stderr are
// set (Run fills in withlock's own).
//
// The caller must have locked its goroutine to the OS thread and keep it
// locked until the child has exited (forkAndAwait does). PR_SET_PDEATHSIG
// fires when the *thread* that forked the child exits, not the process (the
// Go pdeathsig pitfall, golang.org/issue/27505): forked from an unlocked
// goroutine, the child could be KILLed whenever the runtime retires that
// thread. On a locked thread the parent thread lives as long as the child.
func spawn(cfg Config, mode spawnMode) (int, error) {
	path := cfg.Path
	if path == "" {
		var err error
		if path, err = LookPath(cfg.Argv[0], cfg.Env); err != nil {
			return 0, err
		}
	}
	sys := &syscall.SysProcAttr{
		Setpgid:   !mode.shared,
		Pdeathsig: syscall.SIGKILL,
	}
	if mode.term != nil {
		// The child makes its new group the terminal's foreground group
		// itself, between fork and exec, with all signals still blocked
		// (so no SIGTTOU stops it).
		sys.Foreground = true
		sys.Ctty = mode.term.fd
	}
	files := []uintptr{cfg.Stdin.Fd(), cfg.Stdout.Fd(), cfg.Stderr.Fd()}
	for _, f := range cfg.ExtraFiles {
		files = append(files, f.Fd()) // a nil *os.File's is ^0: closed in the child
	}
	attr := &syscall.ProcAttr{
		Env:   cfg.Env,
		Files: files,
		Sys:   sys,
	}
	// The child starts with withlock's signal mask and its ignored signals:
	// ForkExec's child restores the forking thread's mask (Go gives every
	// thread the mask the process started with, less the signals the
	// runtime must see: SIGCHLD, SIGPROF and the synchronous ones) and
	// resets to SIG_DFL only the signals Go handles; one left at SIG_IGN
	// (HUP or INT, see Signals) stays ignored across exec.
	//
	// The files are handed over as descriptors, never through pipes and
	// copying goroutines, so a grandchild that keeps stdout open cannot make
	// withlock wait for it.
	pid, err := syscall.ForkExec(path, cfg.Argv, attr)
	runtime.KeepAlive(&cfg) // its files, until the child has them
	if err != nil {
		return 0, execError(path, err)
	}
	return pid, nil
}

func orStd(f, std *os.File) *os.File {
	if f == nil {
		return std
	}
	return f
}

// execError names the command and classifies why exec failed: a missing file
// is "not found" (127), anything else "not executable" (126), as in sh.
func execError(path string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("%w: %s: %w", ErrNotFound, path, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrNotExecutable, path, err)
}

// spawnStatus is withlock's exit status for a child that never started.
func spawnStatus(err error) int {
	if errors.Is(err, ErrNotFound) {
		return StatusNotFound
	}
	return StatusNotExecutable
}

// defaultPath is execvp's search path when PATH is unset.
const defaultPath = "/bin:/usr/bin"

// LookPath finds name in the PATH of env (the child's environment) the way
// sh does: a name with a slash is used as it is; otherwise the first
// executable regular file wins, and a match that is not executable makes the
// result "not executable" rather than "not found". Empty PATH entries (the
// current directory) are skipped.
func LookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	var denied string
	for _, dir := range filepath.SplitList(pathOf(env)) {
		if dir == "" {
			continue
		}
		candidate := filepath.Join(dir, name)
		fi, err := os.Stat(candidate)
		if err != nil || fi.IsDir() {
			continue
		}
		if unix.Access(candidate, unix.X_OK) == nil {
			return candidate, nil
		}
		if denied == "" {
			denied = candidate
		}
	}
	if denied != "" {
		return "", fmt.Errorf("%w: %s: %w", ErrNotExecutable, denied, unix.EACCES)
	}
	return "", fmt.Errorf("%w: %s", ErrNotFound, name)
}

// pathOf returns the first PATH in env, or defaultPath.
func pathOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return defaultPath
}
