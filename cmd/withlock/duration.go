package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
)

// duration is the value of every duration flag of withlock (SPEC §1): a bare
// number is seconds, as with timeout(1) (`--timeout 5`, `--grace 2.5`), and
// anything else is a Go duration (`90s`, `1m30s`). A flag may also take days
// (`7d`, `1.5d`: gc --older-than) or "forever" (--wait). Negative values are
// refused.
//
// It is the cli.Value held by a cli.GenericFlag (see durationFlag). Its Get
// is the time.Duration (-1 for forever), so cmd.Duration(name) reads it like
// a cli.DurationFlag; its String is a Go duration, and zero is the empty
// string, which keeps "(default: 0s)" out of the help.
type duration struct {
	d       time.Duration // -1: forever
	days    bool          // also takes "7d"
	forever bool          // also takes "forever" (and "inf")
}

// Set parses s as the flag's new value.
func (v *duration) Set(s string) error {
	if v.forever && (s == "forever" || s == "inf") {
		v.d = -1
		return nil
	}
	d, err := parseDuration(s, v.days)
	if err != nil {
		return err
	}
	v.d = d
	return nil
}

// Get is the value cmd.Duration(name) returns: -1 for forever.
func (v *duration) Get() any { return v.d }

func (v *duration) String() string {
	switch {
	case v == nil || v.d == 0:
		return ""
	case v.d < 0:
		return "forever"
	}
	return v.d.String()
}

// durationFlag is a duration flag named name with default def. Options
// (days, forever, environment variables) are set on the result.
func durationFlag(name string, def time.Duration, usage string) *cli.GenericFlag {
	return &cli.GenericFlag{Name: name, Value: &duration{d: def}, Usage: usage, DefaultText: formatDuration(def, false)}
}

// daysFlag is durationFlag that also takes days (gc --older-than).
func daysFlag(name string, def time.Duration, usage string) *cli.GenericFlag {
	return &cli.GenericFlag{Name: name, Value: &duration{d: def, days: true}, Usage: usage, DefaultText: formatDuration(def, true)}
}

// waitFlag is durationFlag that also takes "forever" (--wait).
func waitFlag(name string, usage string) *cli.GenericFlag {
	return &cli.GenericFlag{Name: name, Value: &duration{forever: true}, Usage: usage}
}

// parseDuration reads a duration flag's value: seconds (`5`, `2.5`, `.5`),
// a Go duration (`90s`, `1h30m`), and with days also `7d` or `1.5d`.
func parseDuration(s string, days bool) (time.Duration, error) {
	want := "want seconds (5, 2.5) or a duration (90s, 5m, 1h)"
	if days {
		want = "want days (7d, 1.5d), seconds (3600) or a duration (36h)"
	}
	if s == "" {
		return 0, fmt.Errorf("empty value: %s", want)
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q: must not be negative", s)
	}
	unit, num := time.Second, s
	if days && strings.HasSuffix(s, "d") {
		unit, num = 24*time.Hour, strings.TrimSuffix(s, "d")
	}
	if isDecimal(num) {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %s", s, want)
		}
		ns := f * float64(unit)
		if ns >= math.MaxInt64 {
			return 0, fmt.Errorf("%q: too large", s)
		}
		return time.Duration(ns), nil
	}
	if unit != time.Second { // "…d" that is no number of days
		return 0, fmt.Errorf("%q: %s", s, want)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: %s", s, want)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q: must not be negative", s)
	}
	return d, nil
}

// isDecimal reports whether s is digits with at most one '.' and at least
// one digit, optionally after a '+': what timeout(1) takes, and not the
// exponents, hex and infinities strconv.ParseFloat would also accept.
func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "+")
	digits, dots := 0, 0
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// formatDuration is d as the help shows a default: "10s", "168h" (or "7d"
// when days are taken), and "" for zero.
func formatDuration(d time.Duration, days bool) string {
	if d == 0 {
		return ""
	}
	if days && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// withEnv is f also read from the environment variables env.
func withEnv(f *cli.GenericFlag, env ...string) *envDurationFlag {
	f.Sources = cli.EnvVars(env...)
	return &envDurationFlag{GenericFlag: f}
}

// envDurationFlag is a duration flag that is also read from environment
// variables. withlock has always parsed such a variable whenever its
// command runs, before the command line, and refused one that does not
// parse even when the flag is given too (urfave/cli v2 did, in its flag
// set's set-up). urfave/cli v3 reads the variable only when the command
// line does not set the flag, and words the error its own way: PreParse,
// which v3 calls before it parses the command's flags, keeps the check and
// its line, `run: could not parse "x" from environment variable
// "WITHLOCK_ETCD_DIAL_TIMEOUT" as value for flag etcd-dial-timeout: …`.
type envDurationFlag struct {
	*cli.GenericFlag
	path string // of the command, for the error (set by setupCommand)
}

// PreParse refuses a variable that does not parse; only the first variable
// that is set counts, and an empty one means "not set".
func (f *envDurationFlag) PreParse() error {
	if err := f.GenericFlag.PreParse(); err != nil {
		return err
	}
	for _, key := range f.GetEnvVars() {
		val, found := os.LookupEnv(key)
		if !found {
			continue
		}
		if d, ok := f.Value.(*duration); ok && val != "" {
			check := *d // a copy: the flag's own value stays the default
			if err := check.Set(val); err != nil {
				return usageError("%s: could not parse %q from environment variable %q as value for flag %s: %v", f.path, val, key, f.Name, err)
			}
		}
		return nil
	}
	return nil
}
