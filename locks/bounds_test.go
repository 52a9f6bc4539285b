package locks

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// SPEC §3: a TTL outside 1 s … 1 year is a usage error, also where a count
// of seconds would wrap inside time.Duration (99999999999 s is year 5138 as
// a count, and wraps to a negative duration when multiplied).
func TestResolveTTLBounds(t *testing.T) {
	env := func(k, v string) func(string) string {
		return func(key string) string {
			if key == k {
				return v
			}
			return ""
		}
	}
	bad := []struct {
		flag time.Duration
		k, v string
	}{
		{time.Nanosecond, "", ""},
		{999 * time.Millisecond, "", ""},
		{2100000 * time.Hour, "", ""},
		{-time.Second, "", ""},
		{0, "WITHLOCK_TTL", "99999999999"},
		{0, "WITHLOCK_TTL", "1ns"},
		{0, "WITHLOCK_TTL", "2100000h"},
		{0, "WITHLOCK_TTL", "0"},
		{0, "WITHLOCK_TTL", "-5"},
		{0, "NEXUSCORE_RUN_LOCK_TTL_SECONDS", "99999999999"},
		{0, "NEXUSCORE_RUN_LOCK_TTL_SECONDS", "31536001"},
		{0, "NEXUSCORE_RUN_LOCK_TTL_SECONDS", "0"},
	}
	for _, c := range bad {
		got, err := ResolveTTL(c.flag, env(c.k, c.v))
		if !errors.Is(err, ErrInvalid) || got != 0 {
			t.Errorf("ResolveTTL(%v, %s=%q) = %v, %v; want ErrInvalid", c.flag, c.k, c.v, got, err)
		}
	}
	good := []struct {
		flag time.Duration
		k, v string
		want time.Duration
	}{
		{time.Second, "", "", time.Second},
		{MaxTTL, "", "", MaxTTL},
		{0, "WITHLOCK_TTL", "31536000", MaxTTL},
		{0, "NEXUSCORE_RUN_LOCK_TTL_SECONDS", "1", time.Second},
	}
	for _, c := range good {
		if got, err := ResolveTTL(c.flag, env(c.k, c.v)); err != nil || got != c.want {
			t.Errorf("ResolveTTL(%v, %s=%q) = %v, %v; want %v", c.flag, c.k, c.v, got, err, c.want)
		}
	}
	// The message names the source and stays one short line.
	_, err := ResolveTTL(0, env("WITHLOCK_TTL", "99999999999"))
	if msg := err.Error(); !strings.HasPrefix(msg, `WITHLOCK_TTL="99999999999": `) || strings.Contains(msg, "\n") {
		t.Errorf("message %q", msg)
	}
}

// A run id over 4 KiB is refused before anything is created, at once (not
// retried as a fault), with a message that does not quote it whole.
func TestRunIDTooLong(t *testing.T) {
	dir := t.TempDir()
	r := newTestLocker(t, dir, time.Minute)
	long := strings.Repeat("<", MaxRunIDLen+1)
	start := time.Now()
	_, err := r.Acquire(context.Background(), long, time.Minute)
	if !errors.Is(err, ErrInvalid) {
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
	l := mustAcquire(t, r, strings.Repeat("<", MaxRunIDLen))
	l.Release()
}

// The largest payload withlock can write — a 4 KiB run id and a command
// made of characters that JSON escapes to six bytes each — stays far below
// the reader's cap, so a live lock is never read as corrupt (issue 16: a
// 70 KiB run id, or ~11,000 '<', let a second holder in).
func TestWorstCasePayloadFitsCap(t *testing.T) {
	r := newTestLocker(t, t.TempDir(), time.Minute)
	r.Command = strings.Repeat("<", 70<<10)
	l := mustAcquire(t, r, strings.Repeat("<", MaxRunIDLen))
	defer l.Release()
	data, err := os.ReadFile(l.Path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > MaxPayload/2 {
		t.Errorf("payload is %d bytes; want well under MaxPayload (%d)", len(data), MaxPayload)
	}
	p, err := ParsePayload(data)
	if err != nil || p.LockID != l.LockID() {
		t.Fatalf("payload does not parse back: %v", err)
	}
	if escapedLen(p.Command) > maxCommandLen || len(p.Command) == 0 {
		t.Errorf("command escaped to %d bytes, want at most %d", escapedLen(p.Command), maxCommandLen)
	}
}

func TestTruncateEscaped(t *testing.T) {
	cases := []struct {
		in    string
		limit int
		want  string
	}{
		{"abc", 10, "abc"},
		{"abcdef", 3, "abc"},
		{"<<<", 12, "<<"},
		{"<<<", 11, "<"},
		{"ééé", 5, "éé"}, // two bytes each, never cut inside one
		{"a\nb", 2, "a"},
		{"\u2028x", 6, "\u2028"},
	}
	for _, c := range cases {
		got := truncateEscaped(c.in, c.limit)
		if got != c.want || !utf8.ValidString(got) || escapedLen(got) > c.limit {
			t.Errorf("truncateEscaped(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
	for _, s := range []string{"plain", "<>&\"\\\n\t\x01", "é\u2028\u2029", "\xff\xfe", "日本語"} {
		enc, _ := json.Marshal(s)
		if got, want := escapedLen(s), len(enc)-2; got != want {
			t.Errorf("escapedLen(%q) = %d, encoding/json wrote %d", s, got, want)
		}
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
		p := Payload{RunID: "job", LockID: "x", Pid: 1, CreatedAt: 1, ExpiresAt: 2, FencingToken: math.MaxUint64}
		if err := os.WriteFile(r.LockPath("job"), encoded(p), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := r.Acquire(context.Background(), "job", time.Minute)
		if !errors.Is(err, ErrFenceExhausted) || !errors.Is(err, ErrUnavailable) {
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

// encoded is p as a lock file holds it.
func encoded(p Payload) []byte {
	b, err := p.Encode()
	if err != nil {
		panic(err)
	}
	return b
}
