package scope

import (
	"github.com/withlock/withlock/internal/proc"

	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// newRegistry is a registry in a fresh directory (which the registry
// creates), with its log captured.
func newRegistry(t testing.TB) (*Registry, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	return &Registry{
		Path:     filepath.Join(t.TempDir(), "withlock", "scope.lock"),
		LockWait: 5 * time.Second,
		Log:      zerolog.New(logs),
	}, logs
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// holder is a process that a test registers allocations for.
type holder struct {
	PID   int
	Start uint64
	cmd   *exec.Cmd
}

// self is the test process: alive for the whole test.
func self(t testing.TB) holder {
	t.Helper()
	start, err := proc.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	return holder{PID: os.Getpid(), Start: start}
}

// liveProcess starts a sleeping process that the test can kill.
func liveProcess(t testing.TB) *holder {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{PID: cmd.Process.Pid, cmd: cmd}
	t.Cleanup(func() { h.kill(t) })
	start, err := proc.StartTime(h.PID)
	if err != nil {
		t.Fatal(err)
	}
	h.Start = start
	return h
}

// kill ends the process and reaps it, so its pid is truly dead (ESRCH).
func (h *holder) kill(t testing.TB) {
	if h.cmd == nil || h.cmd.ProcessState != nil {
		return
	}
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

// deadProcess is a process that ran and was reaped: a real dead pid, with
// the start time it had, never a guessed number.
func deadProcess(t testing.TB) holder {
	t.Helper()
	h := liveProcess(t)
	h.kill(t)
	return holder{PID: h.PID, Start: h.Start}
}

func (h holder) request(name string, allow ...string) Request {
	return Request{Name: name, PID: h.PID, PIDStart: h.Start, Allow: mustSpecs(allow)}
}

func mustSpecs(texts []string) []Spec {
	out, err := ParseSpecs(texts)
	if err != nil {
		panic(err)
	}
	return out
}

func mustRegister(t testing.TB, f *Registry, q Request) Allocation {
	t.Helper()
	a, err := f.Register(context.Background(), q)
	if err != nil {
		t.Fatalf("register %s: %v", q.Name, err)
	}
	return a
}

// readRegistryFile decodes the registry as it is on disk.
func readRegistryFile(t testing.TB, path string) *Table {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := DecodeTable(data)
	if err != nil {
		t.Fatalf("registry on disk does not decode: %v\n%s", err, data)
	}
	return reg
}

func allocationNamed(t testing.TB, reg *Table, name string) Allocation {
	t.Helper()
	a := reg.find(name)
	if a == nil {
		t.Fatalf("no allocation %q in %+v", name, reg.Allocations)
	}
	return *a
}

func names(reg *Table) []string {
	var out []string
	for _, a := range reg.Allocations {
		out = append(out, a.Name)
	}
	return out
}

func readFileString(path string) (string, error) {
	data, err := os.ReadFile(path)
	return string(data), err
}

// ParseSpecs parses every text; the first malformed one is the error.
func ParseSpecs(texts []string) ([]Spec, error) {
	out := make([]Spec, 0, len(texts))
	for _, t := range texts {
		s, err := ParseSpec(t)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
