package filelock

import (
	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/locks"

	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A lock_id that is not one file name's end makes the payload name no tree
// file, so the stale judge never probes — and a reclaimer never removes —
// a path outside the lock dir that another user's payload points at.
func TestPayloadTreeNameOutsideDir(t *testing.T) {
	for _, tt := range []struct {
		lockID string
		tree   bool
	}{
		{"0123456789abcdef0123456789abcdef", true},
		{"seed-uuid-4f1c", true},
		{"x/../../../etc/passwd", false},
		{"/etc/passwd", false},
		{"a\x00b", false},
		{strings.Repeat("a", 161), false},
	} {
		data, _ := json.Marshal(map[string]any{"run_id": "r", "lock_id": tt.lockID, "pid": 1, "created_at": 1.0, "expires_at": 2.0, "tree": true})
		p, err := locks.ParsePayload(data)
		if err != nil {
			t.Fatalf("%q: %v", tt.lockID, err)
		}
		if p.Tree != tt.tree {
			t.Errorf("lock_id %q: tree %v, want %v", tt.lockID, p.Tree, tt.tree)
		}
	}

	// The judge, on a local payload of a dead holder: the probe is asked
	// only about paths inside the dir.
	dir := t.TempDir()
	self := Identity{Host: "h", BootID: "b", PidNS: 7}
	now := time.Now()
	for _, id := range []string{"plain", "x/../../../victim"} {
		data, _ := json.Marshal(map[string]any{"run_id": "r", "lock_id": id, "pid": 4242, "created_at": 1.0,
			"expires_at": float64(now.Add(time.Hour).Unix()), "host": "h", "boot_id": "b", "pid_ns": 7, "tree": true})
		p, err := locks.ParsePayload(data)
		if err != nil {
			t.Fatal(err)
		}
		lockPath := filepath.Join(dir, locks.Key("r")+".lock")
		var probed []string
		v := lockView{path: lockPath, payload: p, modTime: now}
		Judge(v, now, self, func(int, uint64) proc.Liveness { return proc.Dead }, func(path string) TreeState {
			probed = append(probed, path)
			return TreeEnded
		})
		for _, path := range probed {
			if filepath.Dir(filepath.Clean(path)) != dir {
				t.Errorf("lock_id %q: probed %s, outside %s", id, path, dir)
			}
		}
		if id == "plain" && len(probed) != 1 {
			t.Errorf("plain lock_id: probed %v, want its tree file once (the check would see nothing)", probed)
		}
	}
}
