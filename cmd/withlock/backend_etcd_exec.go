//go:build !etcd

package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
)

// In the default build, --backend etcd hands the whole command over to
// withlock-etcd, git-style: the same argv, environment, pid and file
// descriptors, so signals, exit status and the supervisor are exactly
// those of a direct run. See backend_etcd_flags.go for why.

func init() {
	backends["etcd"] = execEtcdBackend
	execBackends["etcd"] = true
}

func execEtcdBackend(*cli.Command, zerolog.Logger, string, func(*locks.Holder, time.Duration)) (backend, error) {
	return nil, execEtcdBinary()
}

// etcdStatus is `withlock status --backend etcd`: withlock-etcd answers it.
func etcdStatus(*cli.Command) error { return execEtcdBinary() }

// etcdBreak is `withlock break --backend etcd RUN_ID`: withlock-etcd does it.
func etcdBreak(*cli.Command, string) error { return execEtcdBinary() }

// execEtcdBinary replaces this process with withlock-etcd, found beside
// this executable or else in PATH, running the same command line. It
// returns only on failure, with an error that exits 73.
func execEtcdBinary() error {
	if p := os.Getenv(execMarkerEnv); p != "" {
		return exitWith(exitCantCreate, fmt.Errorf("--backend etcd: %s was built without the etcd backend (build it with: go build -tags etcd -o %s ./cmd/withlock)", p, etcdBinaryName))
	}
	path, err := findEtcdBinary()
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	// Exec resets caught signals to their default, so a HUP or INT that
	// withlock inherited as ignored (nohup), and that the supervisor
	// subscribed to, would reach withlock-etcd as default; Reset puts the
	// inherited ignore back. (For other signals Go does not keep an
	// inherited ignore even in a direct run, so withlock-etcd sees what
	// withlock saw.)
	signal.Reset()
	argv := append([]string{path}, os.Args[1:]...)
	// childEnv drops an inherited marker: getenv reads the first of two,
	// and an empty one would let a mis-built withlock-etcd exec itself.
	err = syscall.Exec(path, argv, childEnv(os.Environ(), []string{execMarkerEnv + "=" + path}))
	return exitWith(exitCantCreate, fmt.Errorf("--backend etcd: exec %s: %w", path, err))
}

// findEtcdBinary looks beside the running executable, then in PATH.
func findEtcdBinary() (string, error) {
	var beside string
	if exe, err := os.Executable(); err == nil {
		beside = filepath.Join(filepath.Dir(exe), etcdBinaryName)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(etcdBinaryName); err == nil {
		return filepath.Abs(p)
	}
	where := "in PATH"
	if beside != "" {
		where = "at " + beside + " or in PATH"
	}
	return "", fmt.Errorf("--backend etcd needs %s, which is not installed %s (build it with: go build -tags etcd -o %s ./cmd/withlock)",
		etcdBinaryName, where, etcdBinaryName)
}
