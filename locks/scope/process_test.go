package scope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cross-process tests re-run the test binary with WITHLOCK_SCOPE_TEST_ROLE
// choosing what the process does (as cmd/go/internal/lockedfile does).
const roleEnv = "WITHLOCK_SCOPE_TEST_ROLE"

// TestScopeHelperProcess is not a test: it is the body of the processes the
// tests below start.
func TestScopeHelperProcess(t *testing.T) {
	role := os.Getenv(roleEnv)
	if role == "" {
		t.Skip("helper process for the scope registry tests")
	}
	path := os.Getenv("SCOPE_FILE")
	prefix := os.Getenv("SCOPE_PREFIX")
	count, _ := strconv.Atoi(os.Getenv("SCOPE_COUNT"))
	pid, _ := strconv.Atoi(os.Getenv("SCOPE_HOLDER_PID"))
	start, _ := strconv.ParseUint(os.Getenv("SCOPE_HOLDER_START"), 10, 64)
	var err error
	switch role {
	case "register":
		err = registerMany(path, prefix, count, holder{PID: pid, Start: start}, os.Getenv("SCOPE_SAME"))
	case "seed-writer":
		err = seedWriteMany(path, prefix, count, pid)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// registerMany registers count allocations. With same set, the i-th asks
// for that scope with "{i}" replaced by i — the scope every helper races
// for in round i — and the outcome of each is printed.
func registerMany(path, prefix string, count int, h holder, same string) error {
	f := &Registry{Path: path, LockWait: 20 * time.Second}
	for i := range count {
		name := prefix + "-" + strconv.Itoa(i)
		scope := "/conc/" + name + ":write:recursive"
		if same != "" {
			scope = strings.ReplaceAll(same, "{i}", strconv.Itoa(i))
		}
		_, err := f.Register(context.Background(), h.request(name, scope))
		switch {
		case err == nil:
			fmt.Println("registered", strconv.Itoa(i))
		case same != "" && errors.Is(err, ErrConflict):
			fmt.Println("refused", name)
		default:
			return err
		}
	}
	return nil
}

// seedWriteMany is another program following seed 004's protocol and
// nothing more: flock(LOCK_EX) the registry, read it, add an allocation,
// write it back in place, unlock.
func seedWriteMany(path, prefix string, count, pid int) error {
	for i := range count {
		if err := seedWriteOne(path, prefix+"-"+strconv.Itoa(i), pid); err != nil {
			return err
		}
	}
	return nil
}

func seedWriteOne(path, name string, pid int) error {
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer file.Close()
	if err := unix.Flock(int(file.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	data, err := io.ReadAll(file)
	if err != nil {
		return err
	}
	doc := map[string]any{"allocations": []any{}}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("seed writer read %q: %w", data, err)
		}
	}
	doc["allocations"] = append(doc["allocations"].([]any), map[string]any{
		"name": name, "pid": pid, "socket": "/run/" + name + ".sock",
		"scope_allow": []string{"/foreign/" + name + ":write:recursive"}, "delegated_from": nil,
	})
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if err := file.Truncate(0); err != nil {
		return err
	}
	_, err = file.WriteAt(out, 0)
	return err
}

type helperRun struct {
	role, prefix string
	count        int
	same         string
}

// runHelpers starts every helper at once and returns their stdout lines.
func runHelpers(t *testing.T, path string, h holder, runs ...helperRun) []string {
	t.Helper()
	var (
		mu    sync.Mutex
		lines []string
		wg    sync.WaitGroup
		errs  = make(chan error, len(runs))
	)
	for _, r := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestScopeHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			roleEnv+"="+r.role, "SCOPE_FILE="+path, "SCOPE_PREFIX="+r.prefix,
			"SCOPE_COUNT="+strconv.Itoa(r.count), "SCOPE_SAME="+r.same,
			"SCOPE_HOLDER_PID="+strconv.Itoa(h.PID), "SCOPE_HOLDER_START="+strconv.FormatUint(h.Start, 10))
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				errs <- fmt.Errorf("%s %s: %v: %s", r.role, r.prefix, err, stderr)
				return
			}
			mu.Lock()
			lines = append(lines, strings.Fields(strings.ReplaceAll(string(out), "\n", " \n "))...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return lines
}

// TestScopeConcurrentRegistrationsLoseNothing: many processes register at
// once, next to plain seed-protocol writers; every allocation of both ends
// up in the registry exactly once.
func TestScopeConcurrentRegistrationsLoseNothing(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	mustRegister(t, f, me.request("first", "/first:write")) // creates the registry
	const each = 15
	var runs []helperRun
	for p := range 5 {
		runs = append(runs, helperRun{role: "register", prefix: "w" + strconv.Itoa(p), count: each})
	}
	for p := range 2 {
		runs = append(runs, helperRun{role: "seed-writer", prefix: "seed" + strconv.Itoa(p), count: each})
	}
	runHelpers(t, f.Path, me, runs...)

	reg := readRegistryFile(t, f.Path)
	want := []string{"first"}
	for _, r := range runs {
		for i := range each {
			want = append(want, r.prefix+"-"+strconv.Itoa(i))
		}
	}
	got := names(reg)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("registry holds %d allocations, want %d\nmissing %v\nextra %v",
			len(got), len(want), difference(want, got), difference(got, want))
	}
	// The foreign writer's fields survived withlock's rewrites.
	if a := allocationNamed(t, reg, "seed0-0"); a.Socket != "/run/seed0-0.sock" {
		t.Errorf("foreign allocation %+v", a)
	}
}

// TestScopeConcurrentContendersOneWins: processes race for the same write
// scopes, round after round; each round has exactly one winner.
func TestScopeConcurrentContendersOneWins(t *testing.T) {
	f, _ := newRegistry(t)
	me := self(t)
	const rounds = 20
	var runs []helperRun
	for p := range 6 {
		runs = append(runs, helperRun{role: "register", prefix: "c" + strconv.Itoa(p), count: rounds, same: "/contested/{i}:write:recursive"})
	}
	lines := runHelpers(t, f.Path, me, runs...)
	winners := make(map[string]int)
	for i, l := range lines {
		if l == "registered" && i+1 < len(lines) {
			winners[lines[i+1]]++
		}
	}
	for i := range rounds {
		if n := winners[strconv.Itoa(i)]; n != 1 {
			t.Errorf("round %d: %d winners", i, n)
		}
	}
	if got := names(readRegistryFile(t, f.Path)); len(got) != rounds {
		t.Fatalf("registry holds %d allocations, want %d", len(got), rounds)
	}
}

func difference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
