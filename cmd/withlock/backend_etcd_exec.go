//go:build !etcd

package main

import (
	"fmt"
	"os"
	"os/signal"
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

// etcdReport is the report of the run locks in etcd (metrics, completion):
// withlock-etcd builds it.
func etcdReport(*cli.Command, []string) (*statusReport, []string, error) {
	return nil, nil, execEtcdBinary()
}

// etcdBreak is `withlock break --backend etcd RUN_ID`: withlock-etcd does it.
func etcdBreak(*cli.Command, string) error { return execEtcdBinary() }

// execEtcdBinary replaces this process with withlock-etcd, found beside
// this executable or else in PATH (findHelper), running the same command
// line. It returns only on failure, with an error that exits 73.
func execEtcdBinary() error {
	if p := os.Getenv(execMarkerEnv); p != "" {
		return exitWith(exitCantCreate, fmt.Errorf("--backend etcd: %s was built without the etcd backend (build it with: go build -tags etcd -o %s ./cmd/withlock)", p, etcdBinaryName))
	}
	path, err := findHelper(etcdBinaryName, "go build -tags etcd -o "+etcdBinaryName+" ./cmd/withlock")
	if err != nil {
		return err
	}
	// Exec resets caught signals to their default, so a HUP or INT that
	// withlock inherited as ignored (nohup), and that the supervisor
	// subscribed to, would reach withlock-etcd as default; Reset puts the
	// inherited ignore back. (For other signals Go does not keep an
	// inherited ignore even in a direct run, so withlock-etcd sees what
	// withlock saw.) childEnv drops an inherited marker: getenv reads the
	// first of two, and an empty one would let a mis-built withlock-etcd
	// exec itself.
	signal.Reset()
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), childEnv(os.Environ(), []string{execMarkerEnv + "=" + path}))
	return exitWith(exitCantCreate, fmt.Errorf("exec %s: %w", path, err))
}
