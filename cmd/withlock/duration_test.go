package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	good := []struct {
		in   string
		days bool
		want time.Duration
	}{
		{"0", false, 0},
		{"5", false, 5 * time.Second},
		{"2.5", false, 2500 * time.Millisecond},
		{".5", false, 500 * time.Millisecond},
		{"5.", false, 5 * time.Second},
		{"+3", false, 3 * time.Second},
		{"30s", false, 30 * time.Second},
		{"1m30s", false, 90 * time.Second},
		{"250ms", false, 250 * time.Millisecond},
		{"7d", true, 7 * 24 * time.Hour},
		{"1.5d", true, 36 * time.Hour},
		{"36h", true, 36 * time.Hour},
		{"3600", true, time.Hour},
	}
	for _, c := range good {
		if got, err := parseDuration(c.in, c.days); err != nil || got != c.want {
			t.Errorf("parseDuration(%q, days=%v) = %v, %v; want %v", c.in, c.days, got, err, c.want)
		}
	}
	bad := []struct {
		in    string
		days  bool
		cause string
	}{
		{"", false, "empty value"},
		{"-1", false, "must not be negative"},
		{"-1s", false, "must not be negative"},
		{"7d", false, "want seconds"},
		{"soon", false, "want seconds"},
		{"1e3", false, "want seconds"},
		{"0x10", false, "want seconds"},
		{"inf", false, "want seconds"},
		{"NaN", false, "want seconds"},
		{"1.2.3", false, "want seconds"},
		{"5 s", false, "want seconds"},
		{"d", true, "want days"},
		{"xd", true, "want days"},
		{"-2d", true, "must not be negative"},
		{"99999999999999", false, "too large"},
	}
	for _, c := range bad {
		_, err := parseDuration(c.in, c.days)
		if err == nil || !strings.Contains(err.Error(), c.cause) {
			t.Errorf("parseDuration(%q, days=%v) = %v; want an error with %q", c.in, c.days, err, c.cause)
		}
	}
}

// The flag value: "forever" only where allowed, and a String that
// c.Duration (time.ParseDuration) reads back.
func TestDurationValue(t *testing.T) {
	w := &duration{forever: true}
	if err := w.Set("forever"); err != nil || w.d != -1 || w.String() != "forever" {
		t.Errorf("wait forever: %v %v %q", err, w.d, w.String())
	}
	if err := (&duration{}).Set("forever"); err == nil {
		t.Error("a plain duration flag took forever")
	}
	for _, in := range []string{"2.5", "90", "1h", "0.001"} {
		v := &duration{}
		if err := v.Set(in); err != nil {
			t.Fatal(err)
		}
		back, err := time.ParseDuration(v.String())
		if err != nil || back != v.d {
			t.Errorf("%q: String %q reads back as %v, %v", in, v.String(), back, err)
		}
	}
	if s := (&duration{}).String(); s != "" {
		t.Errorf("zero shows as %q, want nothing", s)
	}
	for d, want := range map[time.Duration]string{10 * time.Second: "10s", 168 * time.Hour: "168h", 90 * time.Minute: "1h30m", 5 * time.Minute: "5m"} {
		if got := formatDuration(d, false); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	if got := formatDuration(168*time.Hour, true); got != "7d" {
		t.Errorf("formatDuration(7d, days) = %q", got)
	}
}
