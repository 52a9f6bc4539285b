package main

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v3"
)

// durFlag is every duration flag of withlock (SPEC §1): a bare number is
// seconds, as with timeout(1) (`--timeout 5`, `--grace 2.5`), anything else
// a Go duration (`90s`, `1m30s`). With Config.days it also takes days (`7d`:
// gc --older-than), with Config.forever "forever" (--wait), read as -1.
// c.Duration(name) reads it; urfave/cli names the flag and the value in the
// error for one that does not parse.
type durFlag = cli.FlagBase[time.Duration, durOpts, durValue]

type durOpts struct{ days, forever bool }

type durValue struct {
	d    *time.Duration
	opts durOpts
}

func (durValue) Create(v time.Duration, p *time.Duration, o durOpts) cli.Value {
	*p = v
	return &durValue{p, o}
}

// ToString is the default the help shows: nothing for zero, whole days as
// days ("7d"), else a Go duration.
func (durValue) ToString(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return ""
	case d < 0:
		return "forever"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

func (v *durValue) Get() any       { return *v.d }
func (v *durValue) String() string { return v.ToString(*v.d) }

func (v *durValue) Set(s string) error {
	if v.opts.forever && s == "forever" {
		*v.d = -1
		return nil
	}
	num, unit := s, float64(time.Second)
	if v.opts.days && strings.HasSuffix(s, "d") {
		num, unit = strings.TrimSuffix(s, "d"), float64(24*time.Hour)
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil && num == s {
		var d time.Duration
		d, err = time.ParseDuration(s)
		n, unit = float64(d), 1
	}
	if err != nil || !(n >= 0 && n*unit < math.MaxInt64) { // refuses NaN and Inf too
		want := "want seconds (5, 2.5) or a duration (90s, 5m), not negative"
		if v.opts.days {
			want = "want days (7d, 1.5d), seconds (3600) or a duration (36h), not negative"
		}
		return errors.New(want)
	}
	*v.d = time.Duration(n * unit)
	return nil
}
