package filelock

import (
	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/locks"

	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzNeverTwoHolders checks the promise, not only "no panic": arbitrary
// bytes as a lock file, then two acquirers race for it.
//   - A file that parses as a lock that has not expired, whose holder is
//     alive, is never taken (by either) and never changed.
//   - An unparseable file that is fresh (within TornGrace) is held too: a
//     foreign writer may be mid-write.
//   - Whatever the file, at most one of the two acquirers gets the lock.
func FuzzNeverTwoHolders(f *testing.F) {
	now := time.Now()
	self, err := SelfIdentity()
	if err != nil {
		f.Fatal(err)
	}
	live := locks.Payload{RunID: "job", LockID: "l", Pid: self.Pid, CreatedAt: locks.Epoch(now), ExpiresAt: locks.Epoch(now.Add(time.Hour)),
		Host: self.Host, BootID: self.BootID, PidNS: self.PidNS, PidStart: self.PidStart, FencingToken: 7}
	f.Add(encoded(live), true)
	seedJSON, _ := json.Marshal(map[string]any{"run_id": "job", "lock_id": "x", "pid": 1, "created_at": 1, "expires_at": 4e9})
	f.Add(seedJSON, false)
	expired := live
	expired.ExpiresAt = 1
	f.Add(encoded(expired), false)
	f.Add([]byte(`{"run_id":"job","lock_id":"x","pid":1,"created_at":1,"expires_at":1e300}`), false)
	f.Add([]byte(`{"run_id":"job","lock_id":"x","pid":1,"created_at":1,"expires_at":9223372036.9}`), true)
	f.Add([]byte(`{"run_id":"job","lock_id":"x","pid":1,"expires_at":4e9,"fencing_token":18446744073709551615}`), false)
	f.Add([]byte(`{"run_id":"job",`), true)
	f.Add([]byte(`{"run_id":"job",`), false)
	f.Add([]byte{}, true)
	f.Add(append(encoded(live)[:len(encoded(live))-2], []byte(`,"pad":"`+strings.Repeat("<", locks.MaxPayload)+`"}`)...), true)
	f.Fuzz(func(t *testing.T, data []byte, fresh bool) {
		dir := t.TempDir()
		lockers := make([]*RunLocker, 2)
		for i := range lockers {
			r := newTestLocker(t, dir, time.Minute)
			// Every holder is alive: nothing may be reclaimed for a dead pid.
			r.live = func(int, uint64) proc.Liveness { return proc.Alive }
			knobsOf(r).noHold = true
			lockers[i] = r
		}
		path := lockers[0].LockPath("job")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		mtime := time.Now().Add(-time.Minute) // long past TornGrace
		if fresh {
			mtime = time.Now().Add(time.Hour) // within it for the whole iteration
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		p, perr := locks.ParsePayload(data)
		// Held for sure: parses and expires well after this iteration, or
		// does not parse and is fresh.
		held := (perr == nil && p.Expires().After(time.Now().Add(time.Minute))) || (perr != nil && fresh)

		var wg sync.WaitGroup
		got := make([]*Lock, len(lockers))
		for i, r := range lockers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i], _, _ = r.TryAcquire("job")
			}()
		}
		wg.Wait()
		taken := 0
		for _, l := range got {
			if l != nil {
				taken++
			}
		}
		if held {
			if taken != 0 {
				t.Fatalf("a held lock file (parse error %v, fresh %v) was taken by %d acquirers:\n%q", perr, fresh, taken, data)
			}
			if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, data) {
				t.Fatalf("a held lock file was changed: %v", err)
			}
		}
		if taken > 1 {
			t.Fatalf("two holders of one lock file:\n%q", data)
		}
		for _, l := range got {
			if l != nil {
				l.Release()
			}
		}
	})
}
