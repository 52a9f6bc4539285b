package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/filelock"
)

// statusFixture is a lock dir with a lock held by this process, a
// moved-aside lock, and a scope registry: a live root (this process) that
// delegated part of its tree to a child whose holder is dead.
func statusFixture(t *testing.T) (*filelock.RunLocker, string, func()) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "locks")
	r, err := filelock.NewRunLocker(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r.Command = "sleep 60"
	l, h, err := r.TryAcquire("job")
	if err != nil || l == nil {
		t.Fatalf("acquire: %v %+v", err, h)
	}
	if err := os.WriteFile(r.LockPath("old")+".stale.1000000000", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	scope := filepath.Join(dir, "scope.lock")
	reg := fmt.Sprintf(`{"allocations":[
	 {"name":"root","pid":%d,"socket":null,"scope_allow":["/p:write:recursive","/etc:read"],"scope_deny":["/p/sub:write:recursive"],"delegated_from":null},
	 {"name":"kid","pid":999999999,"socket":null,"scope_allow":["/p/sub:write:recursive"],"scope_deny":[],"delegated_from":"root"}]}`, os.Getpid())
	if err := os.WriteFile(scope, []byte(reg), 0o600); err != nil {
		t.Fatal(err)
	}
	return r, scope, func() { l.Release() }
}

func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %v", v)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestStatusJSONShape pins the documented fields of `status --json`:
// changing them breaks scripts, so it must be a decision, not an accident.
func TestStatusJSONShape(t *testing.T) {
	r, scope, release := statusFixture(t)
	defer release()
	data, err := json.Marshal(gatherStatus(r, nil, scope))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"": {"dir", "errors", "leftovers", "locks", "now", "scopes", "semaphores"},
		"locks": {"age_seconds", "command", "conflicts_total", "created_at", "error", "expires_at", "expires_in_seconds", "fencing_token",
			"history_file", "holder", "host", "key", "last_duration_seconds", "last_end", "last_exit_code", "last_result", "last_start",
			"last_success", "liveness", "lock_file", "lock_id", "max", "mode", "pid", "pids", "pids_known", "run_id", "runs", "runs_total",
			"skipped_lines", "skipped_starts", "slot", "stale_reason", "state", "tree"},
		"leftovers": {"age_seconds", "key", "kind", "path", "run_id", "since", "size"},
		"scopes":    {"allocations", "file"},
	}
	check := func(name string, v any) {
		if got := keysOf(t, v); !slices.Equal(got, want[name]) {
			t.Errorf("%q fields:\n got %q\nwant %q", name, got, want[name])
		}
	}
	check("", doc)
	check("locks", doc["locks"].([]any)[0])
	check("leftovers", doc["leftovers"].([]any)[0])
	check("scopes", doc["scopes"])
	if errs := doc["errors"].([]any); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}

	lock := doc["locks"].([]any)[0].(map[string]any)
	if lock["run_id"] != "job" || lock["state"] != "held" || lock["liveness"] != "alive" ||
		lock["pid"] != float64(os.Getpid()) || lock["command"] != "sleep 60" || !(lock["fencing_token"].(float64) > 0) ||
		lock["tree"] != "running" || lock["holder"] != "" {
		t.Errorf("lock: %v", lock)
	}
	if in := lock["expires_in_seconds"].(float64); in <= 0 || in > 60 {
		t.Errorf("expires_in_seconds %v, want within the minute's TTL", in)
	}
	roots := doc["scopes"].(map[string]any)["allocations"].([]any)
	if len(roots) != 1 {
		t.Fatalf("scope roots: %v", roots)
	}
	root := roots[0].(map[string]any)
	kid := root["children"].([]any)[0].(map[string]any)
	if root["name"] != "root" || root["alive"] != true || kid["name"] != "kid" || kid["alive"] != false {
		t.Errorf("scope tree: %v", root)
	}
}

func TestStatusTable(t *testing.T) {
	r, scope, release := statusFixture(t)
	defer release()
	var out bytes.Buffer
	writeStatusTable(&out, gatherStatus(r, nil, scope))
	text := out.String()
	for _, want := range []string{
		fmt.Sprintf("job     held   %d", os.Getpid()),
		"alive",
		"sleep 60",
		"waiting for gc in " + r.Dir + " (1):",
		"stale  -       ",
		"scopes (" + scope + "):",
		"/p:write:recursive except /p/sub:write:recursive",
		"/etc:read",
		"└ kid",
		"999999999",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	// Columns are aligned: each header word starts where its cells do.
	lines := strings.Split(text, "\n")
	if col := strings.Index(lines[0], "COMMAND"); col < 0 || !strings.HasPrefix(lines[1][col:], "sleep 60") {
		t.Errorf("COMMAND column misaligned:\n%s\n%s", lines[0], lines[1])
	}
}

func TestShortDuration(t *testing.T) {
	cases := map[float64]string{0.2: "<1s", 45: "45s", 192: "3m12s", 7500: "2h05m", 3*86400 + 4*3600: "3d04h"}
	for in, want := range cases {
		if got := shortDuration(in); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestStatusTableOneRowPerLock: a command with newlines and tabs (an
// `sh -c` script) stays in its row and column.
func TestStatusTableOneRowPerLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	r, err := filelock.NewRunLocker(dir, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r.Command = "sh -c sleep 5\n\techo done"
	l, h, err := r.TryAcquire("job")
	if err != nil || l == nil {
		t.Fatalf("acquire: %v %+v", err, h)
	}
	defer l.Release()
	var out bytes.Buffer
	writeStatusTable(&out, gatherStatus(r, nil, filepath.Join(dir, "scope.lock")))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], "  sh -c sleep 5  echo done") {
		t.Errorf("want a header and one row ending with the command:\n%s", out.String())
	}
}
