package locks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/rs/zerolog"
)

// MaxPayload is the largest lock file that is parsed; a larger one is
// treated as corrupt.
const MaxPayload = 64 << 10

// Payload is the JSON inside a run lock file, and the record of a holder
// in etcd. The first five fields are the seed writer's schema (epoch
// seconds as floats), so a lock written by that program is read here and
// ours is read there; the rest is what withlock needs to judge liveness on
// this host and to fence.
type Payload struct {
	RunID     string  `json:"run_id"`
	LockID    string  `json:"lock_id"`
	Pid       int     `json:"pid"`
	CreatedAt float64 `json:"created_at"`
	ExpiresAt float64 `json:"expires_at"`

	Host         string `json:"host,omitempty"`
	BootID       string `json:"boot_id,omitempty"`
	PidNS        uint64 `json:"pid_ns,omitempty"`
	PidStart     uint64 `json:"pid_start,omitempty"`
	Command      string `json:"command,omitempty"`
	FencingToken uint64 `json:"fencing_token,omitempty"`
	// Hold: the holder keeps flock(LOCK_EX) on the run id's fence file
	// until it has removed this file, so waiters on its host queue there
	// (see filelock/hold.go).
	Hold bool `json:"hold,omitempty"`
	// Tree: the holder keeps flock(LOCK_EX) on <key>.tree.<lock_id>, a
	// descriptor its command's whole process tree inherits
	// (filelock/tree.go). On this host and boot the lock is held while
	// anything holds that flock.
	Tree bool `json:"tree,omitempty"`
}

var errBadPayload = errors.New("bad lock payload")

// ParsePayload decodes a lock file. It needs the seed's fields to be
// present and sane; everything else is optional.
func ParsePayload(data []byte) (Payload, error) {
	if len(data) == 0 {
		return Payload{}, fmt.Errorf("%w: empty", errBadPayload)
	}
	if len(data) > MaxPayload {
		return Payload{}, fmt.Errorf("%w: over %d bytes", errBadPayload, MaxPayload)
	}
	var p Payload
	if err := json.Unmarshal(data, &p); err != nil {
		return Payload{}, fmt.Errorf("%w: %v", errBadPayload, err)
	}
	if p.LockID == "" || p.ExpiresAt <= 0 {
		return Payload{}, fmt.Errorf("%w: missing lock_id or expires_at", errBadPayload)
	}
	if p.Tree && !plainName(p.LockID) {
		// The tree file's name is built from lock_id: one holding a "/"
		// would name a file outside the lock dir, which a reclaimer (root,
		// in a shared dir another user wrote to) would probe and remove.
		// Such a payload names no tree file: its TTL and pid judge it.
		p.Tree = false
	}
	return p, nil
}

// plainName: s can be the end of one file name — no "/", no NUL, short
// enough for the 255-byte name limit with a key and ".tree." before it.
func plainName(s string) bool {
	return len(s) <= 160 && !strings.ContainsAny(s, "/\x00")
}

// Encode renders the payload as the lock file holds it: JSON and a newline,
// the members encoding/json would write (TestPayloadEncodeMatchesJSON). It
// fails only for a time that is not a finite number, which our clock never
// produces.
func (p Payload) Encode() ([]byte, error) {
	if t := p.CreatedAt + p.ExpiresAt; math.IsNaN(t) || math.IsInf(t, 0) {
		return nil, fmt.Errorf("encode lock payload: times %v, %v are not finite", p.CreatedAt, p.ExpiresAt)
	}
	return JSONLine(p, 5, "run_id", p.RunID, "lock_id", p.LockID, "pid", p.Pid, "created_at", p.CreatedAt,
		"expires_at", p.ExpiresAt, "host", p.Host, "boot_id", p.BootID, "pid_ns", p.PidNS, "pid_start", p.PidStart,
		"command", p.Command, "fencing_token", p.FencingToken, "hold", p.Hold, "tree", p.Tree), nil
}

// JSONLine is one JSON object and a newline: the members kv (a key, its
// value, …) in order, each after the first required left out when its value
// is zero, as encoding/json's omitempty leaves it out. zerolog's encoder (a
// logger with no level, time or message) writes it: encoding/json, which
// reads the files back, would first build the type's encoder by
// reflection, on every run's way to its command and after it
// (docs/performance.md). Should zerolog's global level ever disable its
// events, encoding/json writes v instead.
func JSONLine(v any, required int, kv ...any) []byte {
	var buf bytes.Buffer
	l := zerolog.New(&buf)
	e := l.Log()
	if e == nil {
		b, _ := json.Marshal(v) // strings, numbers, bools and their pointers
		return append(b, '\n')
	}
	members := make([]any, 0, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		if i < 2*required || !reflect.ValueOf(kv[i+1]).IsZero() {
			members = append(members, kv[i], kv[i+1])
		}
	}
	e.Fields(members).Send()
	return buf.Bytes()
}

// Created and Expires convert the epoch-second floats.
func (p Payload) Created() time.Time { return epochTime(p.CreatedAt) }
func (p Payload) Expires() time.Time { return epochTime(p.ExpiresAt) }

// Epoch is t as payloads, records and registries hold it: float epoch
// seconds.
func Epoch(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// epochTime converts epoch seconds without overflowing: sec*1e9 leaves
// int64 past the year 2262, and a foreign writer's far-future expiry must
// stay in the future, not wrap into the past and look expired.
func epochTime(sec float64) time.Time {
	const limit = 1 << 40 // seconds: far past any real expiry, far inside int64
	if math.IsNaN(sec) {
		sec = 0
	}
	sec = max(min(sec, limit), -limit)
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9))
}

// Holder is what is known of the process holding a lock.
type Holder struct {
	Payload
	Path    string
	Torn    bool      // the file could not be parsed yet (a writer may be mid-write)
	ModTime time.Time // of the lock file
	// RecheckAt is when the lock may turn stale by itself: its expiry, or
	// the end of a torn file's grace.
	RecheckAt time.Time
	// Local: the holder's pid is on this host, boot and pid namespace.
	// ForeignPid: on this host and boot, but its pid is of another pid
	// namespace (a container's, `unshare --pid`): not a pid to signal here.
	Local, ForeignPid bool
	// TreeFile is the holder's tree file when it has one on this host and
	// boot (filelock/tree.go); "" otherwise.
	TreeFile string
	// Orphaned: "holder dead, command still running" — the holder is gone
	// but its command's tree still holds the tree file's flock.
	Orphaned bool
	// Pids are the processes of an orphaned tree that still run, as far
	// as /proc shows them (filelock.FindPids); PidsKnown is false when it
	// could not.
	Pids      []int
	PidsKnown bool
	// Owner is the user owning the lock file when that is not us ("uid
	// 65534 (nobody)", in a shared dir), else "".
	Owner string
}

// OrphanedText is how status and conflicts name an orphaned holder.
const OrphanedText = "holder dead, command still running"

// Describe says, in one phrase, who holds the lock.
func (h *Holder) Describe(now time.Time) string {
	if h.Torn {
		return fmt.Sprintf("an unreadable lock file written %s ago (a writer may be mid-write)", age(now, h.ModTime))
	}
	if h.Orphaned {
		return "pid " + h.orphanText()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d", h.Pid)
	if h.ForeignPid {
		b.WriteString(" (in another pid namespace)")
	}
	if h.Owner != "" {
		fmt.Fprintf(&b, " of %s", h.Owner)
	}
	if h.Host != "" {
		fmt.Fprintf(&b, " on %s", h.Host)
	}
	if h.Command != "" {
		fmt.Fprintf(&b, " (%s)", OneLine(h.Command))
	}
	if h.CreatedAt > 0 {
		fmt.Fprintf(&b, " for %s", age(now, h.Created()))
	}
	return b.String()
}

// OneLine turns control characters (newlines and tabs of a `sh -c` script,
// terminal escapes) into spaces, so that text taken from a lock file — a
// holder's command above all — stays on its line: a conflict is reported in
// exactly one line, a table row or a redrawn waiting line must not break.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// orphanText names an orphaned holder's command and the surviving pids
// of its tree: "123's command (holder dead, command still running: pids 124 125)".
func (h *Holder) orphanText() string {
	return fmt.Sprintf("%d's command (%s: %s)", h.Pid, OrphanedText, PidsText(h.Pids, h.PidsKnown))
}

// PidsText names the surviving pids of an orphaned holder's tree, as
// FindPids found them (known false: /proc could not tell).
func PidsText(pids []int, known bool) string {
	switch {
	case !known:
		return "pids unknown"
	case len(pids) == 0:
		return "no pids found"
	}
	return "pids " + strings.Trim(fmt.Sprint(pids), "[]")
}

func age(now, t time.Time) string {
	d := max(now.Sub(t), 0)
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
