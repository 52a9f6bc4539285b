package locks

import (
	"encoding/json"
	"errors"
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
		got := TruncateEscaped(c.in, c.limit)
		if got != c.want || !utf8.ValidString(got) || escapedLen(got) > c.limit {
			t.Errorf("TruncateEscaped(%q, %d) = %q, want %q", c.in, c.limit, got, c.want)
		}
	}
	for _, s := range []string{"plain", "<>&\"\\\n\t\x01", "é\u2028\u2029", "\xff\xfe", "日本語"} {
		enc, _ := json.Marshal(s)
		if got, want := escapedLen(s), len(enc)-2; got != want {
			t.Errorf("escapedLen(%q) = %d, encoding/json wrote %d", s, got, want)
		}
	}
}
