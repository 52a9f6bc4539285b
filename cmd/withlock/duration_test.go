package main

import (
	"strings"
	"testing"
	"time"
)

// Every duration flag takes seconds or a Go duration; days and "forever"
// only where the flag says so; nothing negative.
func TestDurationValue(t *testing.T) {
	const day = 24 * time.Hour
	good := []struct {
		in   string
		opts durOpts
		want time.Duration
	}{
		{"0", durOpts{}, 0},
		{"5", durOpts{}, 5 * time.Second},
		{"2.5", durOpts{}, 2500 * time.Millisecond},
		{".5", durOpts{}, 500 * time.Millisecond},
		{"+3", durOpts{}, 3 * time.Second},
		{"30s", durOpts{}, 30 * time.Second},
		{"1m30s", durOpts{}, 90 * time.Second},
		{"250ms", durOpts{}, 250 * time.Millisecond},
		{"7d", durOpts{days: true}, 7 * day},
		{"1.5d", durOpts{days: true}, 36 * time.Hour},
		{"36h", durOpts{days: true}, 36 * time.Hour},
		{"3600", durOpts{days: true}, time.Hour},
		{"forever", durOpts{forever: true}, -1},
		{"5", durOpts{forever: true}, 5 * time.Second},
	}
	for _, c := range good {
		var d time.Duration
		v := durValue{}.Create(0, &d, c.opts)
		if err := v.Set(c.in); err != nil || d != c.want || v.Get() != c.want {
			t.Errorf("Set(%q) with %+v: %v, %v; want %v", c.in, c.opts, d, err, c.want)
		}
	}
	bad := []struct {
		in   string
		opts durOpts
	}{
		{"", durOpts{}}, {"-1", durOpts{}}, {"-1s", durOpts{}}, {"7d", durOpts{}}, {"soon", durOpts{}},
		{"inf", durOpts{}}, {"NaN", durOpts{}}, {"1.2.3", durOpts{}}, {"5 s", durOpts{}},
		{"99999999999999", durOpts{}}, {"forever", durOpts{}}, {"forever", durOpts{days: true}},
		{"d", durOpts{days: true}}, {"xd", durOpts{days: true}}, {"-2d", durOpts{days: true}}, {"1sd", durOpts{days: true}},
	}
	for _, c := range bad {
		var d time.Duration
		err := durValue{}.Create(0, &d, c.opts).Set(c.in)
		if err == nil || !strings.HasPrefix(err.Error(), "want ") {
			t.Errorf("Set(%q) with %+v: %v, %v; want an error saying what is wanted", c.in, c.opts, d, err)
		}
	}
	for d, want := range map[time.Duration]string{0: "", -1: "forever", 10 * time.Second: "10s", 7 * day: "7d", 90 * time.Minute: "1h30m0s"} {
		if got := (durValue{}).ToString(d); got != want {
			t.Errorf("ToString(%v) = %q, want %q", d, got, want)
		}
	}
}
