package filelock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks"
)

func newTestLocker(t *testing.T, dir string, ttl time.Duration) *RunLocker {
	t.Helper()
	r, err := NewRunLocker(dir, ttl)
	if err != nil {
		t.Fatal(err)
	}
	r.Command = "test"
	return r
}

func mustAcquire(t *testing.T, r *RunLocker, runID string) *Lock {
	t.Helper()
	l, h, err := r.TryAcquire(runID)
	if err != nil {
		t.Fatalf("TryAcquire(%q): %v", runID, err)
	}
	if l == nil {
		t.Fatalf("TryAcquire(%q): held by %+v", runID, h)
	}
	return l
}

func readPayload(t *testing.T, path string) locks.Payload {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := locks.ParsePayload(data)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeLockFile(t *testing.T, path string, v any, mtime time.Time) {
	t.Helper()
	var data []byte
	switch v := v.(type) {
	case []byte:
		data = v
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func staleFiles(t *testing.T, lockPath string) []string {
	t.Helper()
	m, err := filepath.Glob(lockPath + ".stale.*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAcquireWritesPayloadAndReleases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "locks")
	r := newTestLocker(t, dir, time.Minute)
	l := mustAcquire(t, r, "run-1")

	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("lock dir mode = %v, %v; want 0700", fi.Mode(), err)
	}
	if want := filepath.Join(dir, locks.Key("run-1")+".lock"); l.Path != want {
		t.Fatalf("lock path %s, want %s", l.Path, want)
	}
	fi, err = os.Stat(l.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode = %v, %v; want 0600", fi.Mode(), err)
	}
	p := readPayload(t, l.Path)
	self, _ := SelfIdentity()
	if p.RunID != "run-1" || p.LockID != l.LockID() || p.Pid != os.Getpid() ||
		p.Host != self.Host || p.BootID != self.BootID || p.PidNS != self.PidNS ||
		p.PidStart != self.PidStart || p.Command != "test" || p.FencingToken < fenceFloor(p.Created().Add(-time.Second)) {
		t.Fatalf("payload %+v", p)
	}
	if d := p.Expires().Sub(p.Created()); d < 59*time.Second || d > 61*time.Second {
		t.Fatalf("expires-created = %v, want the TTL", d)
	}
	// The raw JSON carries the seed's field names as floats.
	var raw map[string]any
	data, _ := os.ReadFile(l.Path)
	json.Unmarshal(data, &raw)
	for _, k := range []string{"run_id", "lock_id", "pid", "created_at", "expires_at"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("payload lacks seed field %q", k)
		}
	}
	if _, ok := raw["created_at"].(float64); !ok {
		t.Errorf("created_at is %T, want a float", raw["created_at"])
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(l.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lock file after release: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.tmp.*"))
	if len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}

func TestHeldIsAResultNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	a := newTestLocker(t, dir, time.Minute)
	b := newTestLocker(t, dir, time.Minute)
	la := mustAcquire(t, a, "job")
	before, _ := os.ReadFile(la.Path)

	l, h, err := b.TryAcquire("job")
	if err != nil || l != nil || h == nil {
		t.Fatalf("TryAcquire on a held lock = %v, %+v, %v; want nil, holder, nil", l, h, err)
	}
	if h.Pid != os.Getpid() || h.RunID != "job" || !h.Local {
		t.Fatalf("holder %+v", h)
	}
	if d := h.Describe(time.Now()); !strings.Contains(d, "pid ") || !strings.Contains(d, "(test)") {
		t.Fatalf("Describe = %q", d)
	}
	_, err = b.Acquire(context.Background(), "job", 0)
	var he *locks.HeldError
	if !errors.As(err, &he) || !errors.Is(err, locks.ErrHeld) || he.Holder.LockID != la.LockID() {
		t.Fatalf("Acquire on a held lock: %v", err)
	}
	after, _ := os.ReadFile(la.Path)
	if string(before) != string(after) {
		t.Fatal("a conflict changed the lock file")
	}
}

func TestReleaseAndRenewOnlyWhileOurs(t *testing.T) {
	dir := t.TempDir()
	a := newTestLocker(t, dir, time.Minute)
	la := mustAcquire(t, a, "job")
	// Someone else's lock now sits at the path.
	other := readPayload(t, la.Path)
	other.LockID = "someone-else"
	writeLockFile(t, la.Path+".new", other, time.Time{})
	os.Rename(la.Path+".new", la.Path)

	if err := la.Renew(); !errors.Is(err, locks.ErrLost) {
		t.Fatalf("Renew of a lock now owned by another: %v, want ErrLost", err)
	}
	if err := la.Release(); !errors.Is(err, locks.ErrLost) {
		t.Fatalf("Release of a lock now owned by another: %v, want ErrLost", err)
	}
	if p := readPayload(t, la.Path); p.LockID != "someone-else" || p.ExpiresAt != other.ExpiresAt {
		t.Fatalf("the other holder's file was touched: %+v", p)
	}
	os.Remove(la.Path)
	if err := la.Release(); !errors.Is(err, locks.ErrLost) {
		t.Fatalf("Release of a vanished lock: %v, want ErrLost", err)
	}
}

// Release recognises its lock by lock_id, not by the bytes it wrote: a file
// another program rewrote in its own layout, with our lock_id, is still ours
// (the byte comparison is only a shortcut), and after a renewal the new bytes
// are the ones compared.
func TestReleaseOwnLockRewrittenInAnotherLayout(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	l := mustAcquire(t, r, "job")
	if err := l.Renew(); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(); err != nil {
		t.Fatalf("second renew (compares the first renewal's bytes): %v", err)
	}
	p := readPayload(t, l.Path)
	pretty, err := json.MarshalIndent(p, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.Path, pretty, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("Release of our lock in another layout: %v", err)
	}
	if _, err := os.Stat(l.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lock file still there after Release: %v", err)
	}
}

func TestRenewPushesExpiry(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), 2*time.Second)
	l := mustAcquire(t, r, "job")
	first := readPayload(t, l.Path)
	r.now = func() time.Time { return time.Now().Add(time.Second) }
	if err := l.Renew(); err != nil {
		t.Fatal(err)
	}
	second := readPayload(t, l.Path)
	if second.ExpiresAt <= first.ExpiresAt || second.LockID != first.LockID || second.CreatedAt != first.CreatedAt {
		t.Fatalf("renew: before %+v after %+v", first, second)
	}
}

func TestStaleRules(t *testing.T) {
	self, err := SelfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	future, past := locks.Epoch(now.Add(time.Hour)), locks.Epoch(now.Add(-time.Second))
	errTorn := errors.New("bad lock payload")
	local := func(pid int, start uint64) locks.Payload {
		return locks.Payload{LockID: "x", Pid: pid, ExpiresAt: future, Host: self.Host, BootID: self.BootID, PidNS: self.PidNS, PidStart: start}
	}
	tests := []struct {
		name string
		v    lockView
		live proc.Liveness
		want StaleReason
	}{
		{"live local holder", lockView{payload: local(10, 5)}, proc.Alive, NotStale},
		{"expired", lockView{payload: locks.Payload{LockID: "x", Pid: 10, ExpiresAt: past}}, proc.Alive, StaleExpired},
		{"dead local holder", lockView{payload: local(10, 5)}, proc.Dead, StaleDead},
		{"pid reused", lockView{payload: local(10, 5)}, proc.Reused, StaleReused},
		{"other host: only the ttl counts", lockView{payload: func() locks.Payload { p := local(10, 5); p.Host = "elsewhere"; return p }()}, proc.Dead, NotStale},
		{"other boot", lockView{payload: func() locks.Payload { p := local(10, 5); p.BootID = "b"; return p }()}, proc.Dead, NotStale},
		{"other pid namespace", lockView{payload: func() locks.Payload { p := local(10, 5); p.PidNS = 1; return p }()}, proc.Dead, NotStale},
		{"seed writer without host", lockView{payload: locks.Payload{LockID: "x", Pid: 10, ExpiresAt: future}}, proc.Dead, NotStale},
		{"torn and fresh", lockView{parseErr: errTorn, modTime: now.Add(-time.Second)}, proc.Dead, NotStale},
		{"torn and old", lockView{parseErr: errTorn, modTime: now.Add(-3 * time.Second)}, proc.Dead, StaleCorrupt},
	}
	noProbe := func(string) TreeState { t.Fatal("probed a payload without a tree"); return TreeUnknown }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Judge(tc.v, now, self, func(int, uint64) proc.Liveness { return tc.live }, noProbe)
			if got.Reason != tc.want || got.Orphaned {
				t.Fatalf("Judge = %+v, want %q", got, tc.want)
			}
		})
	}
}

// TestStaleRulesTree is the judge of a payload with a tree file, in every
// combination: what the probe finds (running, ended, unknown) × the pid
// (alive, dead, reused) × expired or not × where the holder is (this pid
// namespace; another namespace on this kernel; another host).
func TestStaleRulesTree(t *testing.T) {
	self, err := SelfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	type where int
	const (
		local where = iota
		otherNS
		otherHost
	)
	whereName := []string{"local", "other pid ns", "other host"}
	payload := func(w where, expired bool) locks.Payload {
		p := locks.Payload{LockID: "x", Pid: 10, PidStart: 5, ExpiresAt: locks.Epoch(now.Add(time.Hour)),
			Host: self.Host, BootID: self.BootID, PidNS: self.PidNS, Tree: true}
		if expired {
			p.ExpiresAt = locks.Epoch(now.Add(-time.Second))
		}
		switch w {
		case otherNS:
			p.PidNS = self.PidNS + 1
		case otherHost:
			p.Host = "elsewhere"
		}
		return p
	}
	// want gives the expected verdict: held (NotStale) or a reason, and
	// whether the holder is orphaned.
	want := func(tree TreeState, live proc.Liveness, expired bool, w where) (StaleReason, bool) {
		if w == local && live == proc.Alive {
			return NotStale, false // holds its own tree; never probed, never expired
		}
		if w == otherHost || tree == TreeUnknown {
			// Today's rules: TTL, and the pid where it can be judged.
			switch {
			case expired:
				return StaleExpired, false
			case w == local && live == proc.Dead:
				return StaleDead, false
			case w == local && live == proc.Reused:
				return StaleReused, false
			}
			return NotStale, false
		}
		if tree == TreeRunning {
			return NotStale, w == local // the pid is known dead only in our namespace
		}
		switch {
		case w != local:
			return StaleTreeEnded, false
		case live == proc.Dead:
			return StaleDead, false
		}
		return StaleReused, false
	}
	for _, tree := range []TreeState{TreeRunning, TreeEnded, TreeUnknown} {
		for _, live := range []proc.Liveness{proc.Alive, proc.Dead, proc.Reused} {
			for _, expired := range []bool{false, true} {
				for _, w := range []where{local, otherNS, otherHost} {
					name := fmt.Sprintf("tree %v, pid %v, expired %v, %s", tree, live, expired, whereName[w])
					t.Run(name, func(t *testing.T) {
						v := lockView{path: "/d/k.lock", payload: payload(w, expired)}
						probed := ""
						probe := func(path string) TreeState { probed = path; return tree }
						got := Judge(v, now, self, func(int, uint64) proc.Liveness { return live }, probe)
						reason, orphaned := want(tree, live, expired, w)
						if got.Reason != reason || got.Orphaned != orphaned {
							t.Fatalf("Judge = %+v, want reason %q orphaned %v", got, reason, orphaned)
						}
						if probed != "" && probed != "/d/k.tree.x" {
							t.Fatalf("probed %s, want /d/k.tree.x", probed)
						}
						if w == otherHost && probed != "" {
							t.Fatal("probed the tree file of another host's holder")
						}
					})
				}
			}
		}
	}
}

func TestProcessLiveness(t *testing.T) {
	start, err := proc.StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got := proc.Live(os.Getpid(), start); got != proc.Alive {
		t.Errorf("self = %v", got)
	}
	if got := proc.Live(os.Getpid(), start+1); got != proc.Reused {
		t.Errorf("self with another start time = %v", got)
	}
	if got := proc.Live(deadPid(t), 0); got != proc.Dead {
		t.Errorf("reaped child = %v", got)
	}
	// A zombie never renews: dead.
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for proc.Live(cmd.Process.Pid, 0) != proc.Dead {
		if time.Now().After(deadline) {
			t.Fatal("unreaped exited child never counted as dead")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReclaimMovesStaleAsideAndRetakes(t *testing.T) {
	self, _ := SelfIdentity()
	now := time.Now()
	cases := []struct {
		name    string
		content any
		mtime   time.Time
	}{
		{"expired", locks.Payload{RunID: "job", LockID: "old", Pid: 1, CreatedAt: locks.Epoch(now.Add(-time.Hour)), ExpiresAt: locks.Epoch(now.Add(-time.Minute))}, time.Time{}},
		{"dead holder", locks.Payload{RunID: "job", LockID: "old", Pid: deadPid(t), ExpiresAt: locks.Epoch(now.Add(time.Hour)), Host: self.Host, BootID: self.BootID, PidNS: self.PidNS}, time.Time{}},
		{"pid reused", locks.Payload{RunID: "job", LockID: "old", Pid: os.Getpid(), PidStart: self.PidStart + 7, ExpiresAt: locks.Epoch(now.Add(time.Hour)), Host: self.Host, BootID: self.BootID, PidNS: self.PidNS}, time.Time{}},
		{"empty and old", []byte{}, now.Add(-time.Minute)},
		{"garbage and old", []byte("{not json"), now.Add(-time.Minute)},
		{"oversized and old", []byte(`{"lock_id":"x","expires_at":9e12,"pad":"` + strings.Repeat("a", locks.MaxPayload) + `"}`), now.Add(-time.Minute)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestLocker(t, t.TempDir(), time.Minute)
			path := r.LockPath("job")
			writeLockFile(t, path, tc.content, tc.mtime)
			old, _ := os.ReadFile(path)
			l := mustAcquire(t, r, "job")
			stale := staleFiles(t, path)
			if len(stale) != 1 {
				t.Fatalf("stale files %v, want one", stale)
			}
			if moved, _ := os.ReadFile(stale[0]); string(moved) != string(old) {
				t.Fatal("the stale file is not the old lock")
			}
			if p := readPayload(t, path); p.LockID != l.LockID() {
				t.Fatalf("new lock %+v", p)
			}
		})
	}
}

func TestFreshTornFileCountsAsHeld(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	path := r.LockPath("job")
	writeLockFile(t, path, []byte(`{"run_id":"jo`), time.Now())
	l, h, err := r.TryAcquire("job")
	if err != nil || l != nil || h == nil || !h.Torn {
		t.Fatalf("torn fresh file: %v %+v %v; want held (torn)", l, h, err)
	}
	if len(staleFiles(t, path)) != 0 {
		t.Fatal("a fresh torn file was moved aside")
	}
}

func TestStaleNameNeverOverwritten(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	fixed := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return fixed }
	path := r.LockPath("job")
	earlier := path + ".stale.1700000000"
	writeLockFile(t, earlier, []byte("earlier"), time.Time{})
	for i := 1; i <= 2; i++ {
		writeLockFile(t, path, locks.Payload{LockID: "old", Pid: 1, ExpiresAt: 1}, time.Time{})
		l := mustAcquire(t, r, "job")
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if data, _ := os.ReadFile(earlier); string(data) != "earlier" {
		t.Fatalf("earlier stale file overwritten: %q", data)
	}
	for _, suffix := range []string{".1", ".2"} {
		if _, err := os.Stat(earlier + suffix); err != nil {
			t.Fatalf("want %s: %v", earlier+suffix, err)
		}
	}
}

func TestFencingTokenGrows(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	var last uint64
	for i := 0; i < 3; i++ {
		l := mustAcquire(t, r, "job")
		if l.FencingToken() <= last {
			t.Fatalf("token %d after %d", l.FencingToken(), last)
		}
		last = l.FencingToken()
		env := strings.Join(l.Env(), " ")
		if !strings.Contains(env, "WITHLOCK_FENCING_TOKEN="+itoa(last)) || !strings.Contains(env, "WITHLOCK_LOCK_ID="+l.LockID()) {
			t.Fatalf("env %s", env)
		}
		l.Release()
	}
	// A reclaimed lock carries its token: even with the sidecar gone the
	// next token is larger.
	l := mustAcquire(t, r, "job")
	os.Remove(r.files("job").fence)
	p := readPayload(t, l.Path)
	p.ExpiresAt, p.Tree = 1, false // judged by its TTL alone (see expire)
	writeLockFile(t, l.Path, p, time.Time{})
	l2 := mustAcquire(t, r, "job")
	if l2.FencingToken() <= l.FencingToken() {
		t.Fatalf("token after reclaim %d, before %d", l2.FencingToken(), l.FencingToken())
	}
}

// The counter file keeps a fixed "%020d\n" layout, for every width up to
// the largest uint64.
func TestFencingCounterLayout(t *testing.T) {
	for _, v := range []uint64{0, 1, 1 << 63, math.MaxUint64} {
		if got := counterText(v); len(got) != 21 || got[20] != '\n' {
			t.Errorf("counterText(%d) = %q, want 20 digits and a newline", v, got)
		}
	}
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	// above the clock's floor (fenceFloor), so the stored counter decides
	if err := os.WriteFile(r.files("job").fence, []byte("09000000000000000041\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, r, "job")
	defer l.Release()
	data, err := os.ReadFile(r.files("job").fence)
	if err != nil {
		t.Fatal(err)
	}
	if l.FencingToken() != 9000000000000000042 || string(data) != "09000000000000000042\n" {
		t.Fatalf("token %d, counter file %q; want 42 and the zero-padded 42", l.FencingToken(), data)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func TestSeedWriterInterop(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	path := r.LockPath("r-42")
	// A program following seed 000 alone: O_CREAT|O_EXCL, then its JSON.
	seedWrite := func(expires time.Time) error {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		return json.NewEncoder(f).Encode(map[string]any{
			"run_id": "r-42", "lock_id": "seed-token", "pid": 999999,
			"created_at": locks.Epoch(time.Now()), "expires_at": locks.Epoch(expires),
		})
	}
	if err := seedWrite(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if l, h, err := r.TryAcquire("r-42"); l != nil || err != nil || h.LockID != "seed-token" {
		t.Fatalf("live seed lock not respected: %v %+v %v", l, h, err)
	}
	os.Remove(path)
	if err := seedWrite(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, r, "r-42")
	if len(staleFiles(t, path)) != 1 {
		t.Fatal("expired seed lock not moved aside")
	}
	if err := seedWrite(time.Now().Add(time.Hour)); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("seed writer against our lock: %v, want EEXIST", err)
	}
	l.Release()
}

func TestHeartbeatRenewsAndReportsLoss(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), 150*time.Millisecond)
	l := mustAcquire(t, r, "job")
	first := readPayload(t, l.Path).ExpiresAt
	lost, stop := l.Heartbeat()
	deadline := time.Now().Add(5 * time.Second)
	for readPayload(t, l.Path).ExpiresAt == first {
		if time.Now().After(deadline) {
			t.Fatal("heartbeat never renewed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(l.Path)
	if err := testwait.Recv(t, lost, 5*time.Second, "the loss to be reported"); !errors.Is(err, locks.ErrLost) {
		t.Fatalf("lost: %v", err)
	}
	stop()
}

// A holder on this host and boot in another pid namespace is named as such:
// its pid (often 1, a namespace's init) is not one to signal here. Controls:
// the same holder in our namespace, or on another host, is not.
func TestHolderInAnotherPidNamespace(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	self := r.self
	now := time.Now()
	for _, c := range []struct {
		name    string
		pid     int
		ns      uint64
		host    string
		foreign bool
	}{
		{"another pid namespace", 1, self.PidNS + 1, self.Host, true},
		{"ours", self.Pid, self.PidNS, self.Host, false},
		{"another host", 1, self.PidNS + 1, "elsewhere", false},
	} {
		writeLockFile(t, r.LockPath("job"), locks.Payload{RunID: "job", LockID: "x", Pid: c.pid, PidStart: self.PidStart,
			CreatedAt: locks.Epoch(now), ExpiresAt: locks.Epoch(now.Add(time.Hour)), Host: c.host, BootID: self.BootID, PidNS: c.ns}, now)
		l, h, err := r.TryAcquire("job")
		if err != nil || l != nil {
			t.Fatalf("%s: lock %v, err %v; want a holder", c.name, l, err)
		}
		d := h.Describe(now)
		if h.ForeignPid != c.foreign || strings.Contains(d, "in another pid namespace") != c.foreign {
			t.Errorf("%s: ForeignPid %v, %q", c.name, h.ForeignPid, d)
		}
	}
}
