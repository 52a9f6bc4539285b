package locks

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// ReadLockFile reads files whose size stat does not know (procfs reports 0)
// whole, short and long ones, and still caps a regular file at limit+1.
func TestReadLockFileSizelessAndCapped(t *testing.T) {
	boot, _, err := OSFS{}.ReadLockFile("/proc/sys/kernel/random/boot_id", 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(bytes.TrimSpace(boot)) != 36 {
		t.Fatalf("boot id %q, want 36 characters", boot)
	}
	// Longer than the first buffer: /proc/self/limits, about 1.3 KB and
	// stable while the process runs.
	want, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := OSFS{}.ReadLockFile("/proc/self/limits", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= 512 || !bytes.Equal(got, want) {
		t.Fatalf("limits: read %d bytes, want the %d os.ReadFile reads", len(got), len(want))
	}
	capped, _, err := OSFS{}.ReadLockFile("/proc/self/limits", 100)
	if err != nil || len(capped) != 101 {
		t.Fatalf("limit 100: %d bytes (%v), want 101", len(capped), err)
	}

	path := filepath.Join(t.TempDir(), "big.lock")
	if err := os.WriteFile(path, bytes.Repeat([]byte("y"), 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _, err := (OSFS{}).ReadLockFile(path, 4096); err != nil || len(data) != 4097 {
		t.Fatalf("regular file over the limit: %d bytes (%v), want 4097", len(data), err)
	}
	empty := filepath.Join(t.TempDir(), "empty.lock")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _, err := (OSFS{}).ReadLockFile(empty, 4096); err != nil || len(data) != 0 {
		t.Fatalf("empty file: %q (%v)", data, err)
	}
}
