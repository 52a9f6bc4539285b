//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// scopeSizes are the allocations already in the registry when a scoped
// run registers and releases one more.
var scopeSizes = []int{0, 100, 1000}

// scopeTool names a tool of the scope section.
func scopeTool(allocations int) string {
	return "withlock scope, " + commas(allocations) + " allocations"
}

// scope: `withlock scope -- true` (register, run, release) against a
// registry that already holds N live allocations, next to `withlock run
// -- true` in the same rounds.
func init() {
	register(section{
		order: 85,
		name:  "scope",
		title: "withlock scope --allow P -- true with N live allocations in the registry (wall per run)",
		unit:  "ms",
		note: "the whole scoped command: start-up, register (every holder's pid checked, the overlapping ones in full, the " +
			"conflict check, the rewrite), `true`, release; the N holders are this bench process (pid and start time), so all are alive; " +
			"`withlock run` is one run's wall, the bar's unit",
		runs:   func(b *bench) int { return b.scopeRuns },
		warmup: true,
		prepare: func(b *bench) ([]*tool, func(), error) {
			if b.withlockMissing != "" {
				return []*tool{b.withlockTool("withlock run", nil)}, func() {}, nil
			}
			empty := b.dir("scope-run")
			run := b.withlockTool("withlock run --dir E sc -- true", b.wallOf(0, b.withlock, "run", "--dir", empty, "sc", "--", "/bin/true"))
			run.name = "withlock run"
			tools := []*tool{run}
			for _, n := range scopeSizes {
				file := filepath.Join(b.dir(fmt.Sprintf("scope-%d", n)), "scope.lock")
				if err := writeScopeRegistry(file, n); err != nil {
					return nil, func() {}, err
				}
				argv := []string{b.withlock, "scope", "--scope-file", file, "--allow", "/bench/new:write:recursive", "--", "/bin/true"}
				if _, err := b.runExpect(0, argv...); err != nil {
					return nil, func() {}, err
				}
				if got, err := scopeAllocations(file); err != nil || got != n {
					return nil, func() {}, fmt.Errorf("scope registry %s: %d allocations after a scoped run, want the %d live ones (%v)", file, got, n, err)
				}
				t := b.withlockTool("withlock scope --scope-file F --allow /bench/new:write:recursive -- true", b.wallOf(0, argv...))
				t.name, t.subject = scopeTool(n), true
				tools = append(tools, t)
			}
			return tools, func() {}, nil
		},
	})
}

// writeScopeRegistry writes a registry (the seed's format) of n allocations
// held by this process, each writing its own subtree of /bench.
func writeScopeRegistry(path string, n int) error {
	start, err := processStart(os.Getpid())
	if err != nil {
		return err
	}
	type allocation struct {
		Name          string   `json:"name"`
		PID           int      `json:"pid"`
		Socket        string   `json:"socket"`
		ScopeAllow    []string `json:"scope_allow"`
		DelegatedFrom *string  `json:"delegated_from"`
		ScopeDeny     []string `json:"scope_deny"`
		PIDStart      uint64   `json:"pid_start"`
		CreatedAt     float64  `json:"created_at"`
	}
	reg := struct {
		Allocations []allocation `json:"allocations"`
	}{Allocations: []allocation{}}
	created := float64(time.Now().UnixNano()) / 1e9
	for i := range n {
		reg.Allocations = append(reg.Allocations, allocation{
			Name: fmt.Sprintf("bench%05d", i), PID: os.Getpid(), PIDStart: start,
			ScopeAllow: []string{fmt.Sprintf("/bench/tree%05d:write:recursive", i)}, ScopeDeny: []string{},
			CreatedAt: created,
		})
	}
	data, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o600)
}

// scopeAllocations counts the allocations in the registry at path.
func scopeAllocations(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var reg struct {
		Allocations []json.RawMessage `json:"allocations"`
	}
	if err := json.Unmarshal(data, &reg); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return len(reg.Allocations), nil
}

// processStart is field 22 of /proc/<pid>/stat: the start time in clock
// ticks since boot, the registry's pid_start.
func processStart(pid int) (uint64, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no ')'", path)
	}
	fields := strings.Fields(string(data[i+1:])) // fields[0] is field 3, the state
	if len(fields) < 20 {
		return 0, fmt.Errorf("%s: %d fields", path, len(fields)+2)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
