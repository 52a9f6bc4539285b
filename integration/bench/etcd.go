//go:build linux && etcd

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// The etcd sections (built with -tags etcd): the run lock in an embedded
// etcd on 127.0.0.1 against `etcdctl lock` on the same server, and what the
// etcd build costs on the local lock — the reason the default withlock
// execs withlock-etcd instead of linking the etcd client.
func init() {
	register(section{
		order: 70,
		name:  "etcd",
		title: "etcd lock, run `true`, release (wall per run, one embedded etcd on 127.0.0.1)",
		unit:  "ms",
		note: "withlock = the default build exec'ing withlock-etcd (as installed); withlock-etcd = direct; " +
			"etcdctl = Debian's etcd-client; each: connect, lease, lock, run, unlock, revoke",
		runs:    func(b *bench) int { return b.n },
		warmup:  true,
		prepare: func(b *bench) ([]*tool, func(), error) { return prepareEtcd(b, etcdLockTools) },
	})
	register(section{
		order:  71,
		name:   "etcd-build",
		title:  "local file lock, run `true`: default build vs the etcd build",
		unit:   "ms",
		note:   "the cost of linking the etcd client (gRPC) that the default withlock does not pay",
		runs:   func(b *bench) int { return b.n },
		warmup: true,
		prepare: func(b *bench) ([]*tool, func(), error) {
			return prepareEtcd(b, func(b *bench, e etcdBench) []*tool {
				dir := b.dir("etcd-build")
				return []*tool{
					b.withlockTool("withlock run --dir D eb -- true", b.wallOf(0, b.withlock, "run", "--dir", dir, "eb", "--", "/bin/true")),
					e.tool("withlock-etcd", "withlock-etcd run --dir D eb -- true", b.wallOf(0, e.etcdBin, "run", "--dir", dir, "eb", "--", "/bin/true")),
				}
			})
		},
	})
	register(section{
		order: 72,
		name:  "etcd-memory",
		title: "peak RSS of the lock holder while it runs `sleep 1` (etcd lock; file lock for reference)",
		unit:  "MiB",
		note:  "VmHWM read from /proc; withlock --backend etcd is withlock-etcd after the exec (same pid)",
		runs:  func(b *bench) int { return b.memRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			return prepareEtcd(b, func(b *bench, e etcdBench) []*tool {
				dir := b.dir("etcd-memory")
				return []*tool{
					e.tool("withlock", "withlock run --backend etcd em -- sleep 1",
						b.peakRSS(e.withlock, "run", "--backend", "etcd", "--endpoints", e.srv.Endpoint, "em", "--", "sleep", "1")),
					peer("etcdctl", "etcdctl lock K sleep 1", func(path string) func(int) (float64, error) {
						return b.peakRSS(path, "--endpoints="+e.srv.Endpoint, "lock", "/withlock/run/em-ctl", "sleep", "1")
					}),
					b.withlockTool("withlock run --dir D em -- sleep 1 (file lock)", b.peakRSS(b.withlock, "run", "--dir", dir, "em", "--", "sleep", "1")),
				}
			})
		},
	})
}

// etcdBench is what the etcd sections share: a server, withlock-etcd, and
// a copy of the default withlock beside it (so it finds withlock-etcd).
type etcdBench struct {
	srv      *etcdtest.Server
	withlock string // default build, beside etcdBin
	etcdBin  string
	missing  string // why the withlock tools cannot run
}

func (e etcdBench) tool(name, command string, measure func(int) (float64, error)) *tool {
	return &tool{name: name, command: command, missing: e.missing, measure: measure}
}

func etcdLockTools(b *bench, e etcdBench) []*tool {
	ep := e.srv.Endpoint
	return []*tool{
		e.tool("withlock", "withlock run --backend etcd --endpoints E el -- true",
			b.wallOf(0, e.withlock, "run", "--backend", "etcd", "--endpoints", ep, "el", "--", "/bin/true")),
		e.tool("withlock-etcd", "withlock-etcd run --backend etcd --endpoints E el -- true",
			b.wallOf(0, e.etcdBin, "run", "--backend", "etcd", "--endpoints", ep, "el", "--", "/bin/true")),
		peer("etcdctl", "etcdctl --endpoints E lock /withlock/run/el true", func(path string) func(int) (float64, error) {
			return b.wallOf(0, path, "--endpoints="+ep, "lock", "/withlock/run/el", "/bin/true")
		}),
	}
}

// prepareEtcd starts an embedded etcd, builds withlock-etcd, and returns
// the section's tools with a cleanup that stops the server.
func prepareEtcd(b *bench, tools func(*bench, etcdBench) []*tool) ([]*tool, func(), error) {
	dir := b.dir("etcd")
	srv, err := etcdtest.Configure(dir, etcdtest.Options{})
	if err != nil {
		return nil, func() {}, err
	}
	if err := srv.Launch(); err != nil {
		return nil, func() {}, err
	}
	e := etcdBench{srv: srv, missing: b.withlockMissing}
	if e.missing == "" {
		e.withlock, e.etcdBin, err = installPair(b.withlock, dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			e.missing = "n/a (withlock-etcd build failed)"
		}
	}
	return tools(b, e), srv.Stop, nil
}

// installPair builds withlock-etcd into dir and copies the default
// withlock beside it, as they are installed.
func installPair(withlock, dir string) (string, string, error) {
	etcdBin := filepath.Join(dir, "withlock-etcd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-tags", "etcd", "-o", etcdBin, "github.com/withlock/withlock/cmd/withlock").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("go build -tags etcd ./cmd/withlock: %v\n%s", err, out)
	}
	data, err := os.ReadFile(withlock)
	if err != nil {
		return "", "", err
	}
	beside := filepath.Join(dir, "withlock")
	if err := os.WriteFile(beside, data, 0o755); err != nil {
		return "", "", err
	}
	return beside, etcdBin, nil
}
