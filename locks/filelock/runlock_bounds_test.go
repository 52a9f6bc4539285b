package filelock

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/withlock/withlock/locks"
)

// A run id over 4 KiB is refused before anything is created, at once (not
// retried as a fault), with a message that does not quote it whole.
func TestRunIDTooLong(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	long := strings.Repeat("<", locks.MaxRunIDLen+1)
	start := time.Now()
	_, err := r.Acquire(context.Background(), long, time.Minute)
	if !errors.Is(err, locks.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("refusal took %v: retried as a fault", time.Since(start))
	}
	if n := len(err.Error()); n > 200 {
		t.Errorf("message is %d bytes long", n)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
	l := mustAcquire(t, r, strings.Repeat("<", locks.MaxRunIDLen))
	l.Release()
}

// The largest payload withlock can write — a 4 KiB run id and a command
// made of characters that JSON escapes to six bytes each — stays far below
// the reader's cap, so a live lock is never read as corrupt (issue 16: a
// 70 KiB run id, or ~11,000 '<', let a second holder in).
func TestWorstCasePayloadFitsCap(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	r.Command = strings.Repeat("<", 70<<10)
	l := mustAcquire(t, r, strings.Repeat("<", locks.MaxRunIDLen))
	defer l.Release()
	data, err := os.ReadFile(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > locks.MaxPayload/2 {
		t.Errorf("payload is %d bytes; want well under MaxPayload (%d)", len(data), locks.MaxPayload)
	}
	p, err := locks.ParsePayload(data)
	if err != nil || p.LockID != l.LockID() {
		t.Fatalf("payload does not parse back: %v", err)
	}
	if escapedLen(p.Command) > maxCommandLen || len(p.Command) == 0 {
		t.Errorf("command escaped to %d bytes, want at most %d", escapedLen(p.Command), maxCommandLen)
	}
}

// Fencing (SPEC §3): the token never goes down, also across a wiped lock
// dir and a lost or garbage sidecar, and never wraps.
func TestFencingNeverGoesDown(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	var last uint64
	next := func(what string) {
		t.Helper()
		l := mustAcquire(t, r, "job")
		if l.FencingToken() <= last {
			t.Fatalf("%s: token %d, not above the last one %d", what, l.FencingToken(), last)
		}
		last = l.FencingToken()
		l.Release()
	}
	next("first")
	next("second")
	// A wiped directory (a reboot empties /run and /tmp): the clock floor.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	next("after the dir was wiped")
	// A garbage sidecar: logged and recovered, not an error forever.
	if err := os.WriteFile(r.files("job").fence, []byte("garbage that is longer than the counter's 21 bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	next("after a garbage fence file")
	if data, _ := os.ReadFile(r.files("job").fence); len(data) != 21 {
		t.Errorf("fence file after recovery: %q, want the 21-byte counter alone", data)
	}
	// An empty one.
	if err := os.WriteFile(r.files("job").fence, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	next("after an emptied fence file")
}

// The floor stays a positive int64 for centuries.
func TestFenceFloor(t *testing.T) {
	now := time.Now()
	if f := fenceFloor(now); f < uint64(now.Add(-time.Second).UnixMicro()) || f > uint64(now.Add(time.Second).UnixMicro()) {
		t.Errorf("floor %d is not the microseconds since the epoch", f)
	}
	if f := fenceFloor(time.Date(2500, 1, 1, 0, 0, 0, 0, time.UTC)); f >= 1<<63 {
		t.Errorf("floor in 2500 is %d, past int64", f)
	}
	if f := fenceFloor(time.Unix(-5, 0)); f != 0 {
		t.Errorf("floor before the epoch = %d, want 0", f)
	}
}

// A token at 2^64−1 (in a stale lock, or in the counter) fails the
// acquisition with ErrFenceExhausted, at once, instead of wrapping to 0;
// the stale lock is left where it is.
func TestFencingTokenAtMaximum(t *testing.T) {
	t.Run("stale lock", func(t *testing.T) {
		r := newTestLocker(t, t.TempDir(), time.Minute)
		p := locks.Payload{RunID: "job", LockID: "x", Pid: 1, CreatedAt: 1, ExpiresAt: 2, FencingToken: math.MaxUint64}
		if err := os.WriteFile(r.LockPath("job"), encoded(p), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := r.Acquire(context.Background(), "job", time.Minute)
		if !errors.Is(err, ErrFenceExhausted) || !errors.Is(err, locks.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrFenceExhausted", err)
		}
		if _, err := os.Stat(r.LockPath("job")); err != nil {
			t.Errorf("the stale lock was moved: %v", err)
		}
	})
	t.Run("counter", func(t *testing.T) {
		r := newTestLocker(t, t.TempDir(), time.Minute)
		if err := os.WriteFile(r.files("job").fence, []byte("18446744073709551615\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := r.Acquire(context.Background(), "job", time.Minute)
		if !errors.Is(err, ErrFenceExhausted) {
			t.Fatalf("err = %v, want ErrFenceExhausted", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("message spans lines: %q", err)
		}
		if _, err := os.Stat(r.LockPath("job")); !os.IsNotExist(err) {
			t.Errorf("a lock file was left: %v", err)
		}
	})
}

// escapedLen is how many bytes encoding/json writes for s, quotes excluded
// (as locks measures it).
func escapedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// encoded is p as a lock file holds it.
func encoded(p locks.Payload) []byte {
	b, err := p.Encode()
	if err != nil {
		panic(err)
	}
	return b
}
