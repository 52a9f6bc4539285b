//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/scope"
)

// scopeHolders is how many allocations the registry holds (issue 4's
// benchmark: register + release with 1,000 existing allocations).
const scopeHolders = 1000

// scope: a scope holder's start and exit, through the locks API, against a
// registry of 1,000 live allocations. No peer does this; the target is issue
// 4's.
func init() {
	register(section{
		order:  65,
		name:   "scope",
		title:  "scope registry: register + release with 1,000 existing allocations (wall per pair, in process)",
		unit:   "ms",
		target: 5,
		runs:   func(b *bench) int { return max(b.n, 200) },
		warmup: true,
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir, where, err := scopeDir(b)
			if err != nil {
				return nil, func() {}, err
			}
			cleanup := func() { os.RemoveAll(dir) }
			measure, err := scopeRegisterRelease(filepath.Join(dir, "scope.lock"))
			if err != nil {
				return nil, cleanup, err
			}
			return []*tool{{
				name:    "withlock",
				command: "scope.Registry Register + Release, registry on " + where,
				measure: measure,
			}}, cleanup, nil
		},
		note: "each start checks every holder's liveness for real (one /proc/<pid>/stat read per allocation; " +
			"all 1,000 holders are this process), then the conflict check, the .bak backup and the in-place " +
			"rewrite with fsync; the exit is a second locked read-modify-write",
	})
}

// scopeDir is a fresh 0700 directory on tmpfs (/dev/shm), where the default
// registry lives ($XDG_RUNTIME_DIR), else in the scratch directory.
func scopeDir(b *bench) (dir, where string, err error) {
	if dir, err := os.MkdirTemp("/dev/shm", "withlock-bench-scope-"); err == nil {
		return dir, "tmpfs (/dev/shm)", nil
	}
	dir, err = os.MkdirTemp(b.tmp, "scope-")
	return dir, "the scratch directory " + b.tmp + " (no /dev/shm)", err
}

// scopeRegisterRelease writes a registry of scopeHolders allocations held
// by this process to path and returns a measure that registers one more
// allocation and releases it, in milliseconds.
func scopeRegisterRelease(path string) (func(int) (float64, error), error) {
	pid := os.Getpid()
	start, err := locks.ProcessStartTime(pid)
	if err != nil {
		return nil, err
	}
	reg := &scope.Table{Allocations: make([]scope.Allocation, 0, scopeHolders)}
	created := float64(time.Now().UnixNano()) / 1e9
	for i := range scopeHolders {
		n := strconv.Itoa(i)
		reg.Allocations = append(reg.Allocations, scope.Allocation{
			Name: "holder" + n, PID: pid, PIDStart: start,
			Socket:     "/run/withlock/holder" + n + ".sock",
			ScopeAllow: []string{"/bench/tree" + n + ":write:recursive"},
			ScopeDeny:  []string{},
			CreatedAt:  created,
		})
	}
	if err := os.WriteFile(path, reg.Encode(), 0o600); err != nil {
		return nil, err
	}
	allow, err := scope.ParseSpecs([]string{"/bench/new:write:recursive"})
	if err != nil {
		return nil, err
	}
	f := &scope.Registry{Path: path}
	q := scope.Request{Name: "bench", Allow: allow, PID: pid, PIDStart: start}
	ctx := context.Background()
	return func(int) (float64, error) {
		began := time.Now()
		if _, err := f.Register(ctx, q); err != nil {
			return 0, fmt.Errorf("register: %w", err)
		}
		if err := f.Release(ctx, q.Name, pid); err != nil {
			return 0, fmt.Errorf("release: %w", err)
		}
		return ms(time.Since(began)), nil
	}, nil
}
