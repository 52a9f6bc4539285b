package locks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrInvalid: an argument is outside what SPEC §3 allows (a TTL outside
// 1 s … 1 year, a run id longer than 4 KiB). It is the caller's mistake, not
// a fault: the command line maps it to EX_USAGE (64) and retries nothing.
var ErrInvalid = errors.New("invalid argument")

// The bounds of SPEC §3. A TTL under a second renews faster than the guard
// can be taken and lets a contender in between two renewals; one over a year
// overflows expires_at on its way through time.Duration. A run id is capped
// so that a payload, every string JSON-escaped at six bytes a character,
// stays far below MaxPayload: a file over the cap reads as corrupt, and a
// corrupt file is reclaimed beside its live holder.
const (
	MinTTL      = time.Second
	MaxTTL      = 365 * 24 * time.Hour
	MaxRunIDLen = 4 << 10
)

// InvalidError names the argument and what is wrong with it, in one short
// line that never quotes a huge value whole. It matches ErrInvalid.
type InvalidError struct {
	What   string // "--ttl 1ns", "WITHLOCK_TTL=\"99\"", "run id"
	Reason string
}

func (e *InvalidError) Error() string { return e.What + ": " + e.Reason }

func (e *InvalidError) Unwrap() error { return ErrInvalid }

// DefaultTTL is the lock's lifetime without renewal when nothing says else.
const DefaultTTL = 30 * time.Second

// ResolveTTL picks the TTL: flag > WITHLOCK_TTL (a Go duration, or bare
// seconds) > NEXUSCORE_RUN_LOCK_TTL_SECONDS (integer seconds) > 30s.
// A TTL outside MinTTL … MaxTTL is an *InvalidError (ErrInvalid).
func ResolveTTL(flag time.Duration, getenv func(string) string) (time.Duration, error) {
	if flag != 0 {
		return checkTTL("--ttl "+flag.String(), flag)
	}
	if v := getenv("WITHLOCK_TTL"); v != "" {
		what := "WITHLOCK_TTL=" + strconv.Quote(v)
		if d, err := time.ParseDuration(v); err == nil {
			return checkTTL(what, d)
		}
		return checkTTLSeconds(what, v, "not a duration (30s, 5m) or a number of seconds")
	}
	if v := getenv("NEXUSCORE_RUN_LOCK_TTL_SECONDS"); v != "" {
		return checkTTLSeconds("NEXUSCORE_RUN_LOCK_TTL_SECONDS="+strconv.Quote(v), v, "not an integer number of seconds")
	}
	return DefaultTTL, nil
}

// checkTTL refuses a TTL outside MinTTL … MaxTTL; what names where it came
// from.
func checkTTL(what string, ttl time.Duration) (time.Duration, error) {
	if ttl < MinTTL || ttl > MaxTTL {
		return 0, &InvalidError{What: what, Reason: "ttl must be between 1s and 1 year (8760h)"}
	}
	return ttl, nil
}

// checkTTLSeconds is checkTTL for v, a count of seconds, checked before it
// is multiplied into a time.Duration, where a large count would wrap;
// notNumber is the reason when v is not an integer.
func checkTTLSeconds(what, v, notNumber string) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil:
		return 0, &InvalidError{What: what, Reason: notNumber}
	case n < int64(MinTTL/time.Second) || n > int64(MaxTTL/time.Second):
		return 0, &InvalidError{What: what, Reason: "ttl must be between 1 and 31536000 seconds (1 year)"}
	}
	return time.Duration(n) * time.Second, nil
}

// CheckRunID refuses an empty run id and one longer than MaxRunIDLen bytes.
func CheckRunID(runID string) error { return checkRunID(runID, MaxRunIDLen, "") }

// CheckSlotRunID refuses a run id that cannot name slots (SlotRunID): one
// too long for its slots' run ids to fit MaxRunIDLen, or one holding a NUL.
func CheckSlotRunID(runID string) error {
	limit := MaxRunIDLen - len(SlotRunID("", ModeShared, MaxSlots))
	if err := checkRunID(runID, limit, ", which a slot's run id needs"); err != nil {
		return err
	}
	if strings.Contains(runID, "\x00") {
		return &InvalidError{What: fmt.Sprintf("run id %q", TruncateEscaped(runID, 32)), Reason: "contains a NUL byte"}
	}
	return nil
}

// checkRunID refuses an empty run id and one longer than limit bytes; why
// says what needs the limit, if not SPEC §3.
func checkRunID(runID string, limit int, why string) error {
	switch {
	case runID == "":
		return &InvalidError{What: "run id", Reason: "empty"}
	case len(runID) > limit:
		return &InvalidError{What: fmt.Sprintf("run id %q… (%d bytes)", TruncateEscaped(runID, 32), len(runID)),
			Reason: fmt.Sprintf("longer than %d bytes%s", limit, why)}
	}
	return nil
}

// escapedLen is how many bytes encoding/json writes for the string s (its
// HTML-safe escaping), quotes excluded.
func escapedLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b) - 2
}

// TruncateEscaped cuts s, at a character boundary, to the longest prefix
// whose JSON-escaped form fits in limit bytes.
func TruncateEscaped(s string, limit int) string {
	if len(s) <= limit/6 || escapedLen(s) <= limit {
		return s
	}
	n, end := 0, 0
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		w := escapedLen(s[i : i+size])
		if n+w > limit {
			break
		}
		n += w
		i += size
		end = i
	}
	return s[:end]
}

// Key is the file-system-safe name of a run id: sha256 in hex.
func Key(runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:])
}

// SemMode is how a run id's slots are used.
type SemMode string

const (
	ModeMax    SemMode = "max"    // a counting semaphore of Max slots
	ModeShared SemMode = "shared" // shared holders, as many as come
)

// MaxSlots is the largest --max, and bounds the slots of a shared lock
// (the high-water mark of shared holders at once).
const MaxSlots = 1 << 16

// SlotRunID is the derived run id of slot k of runID.
func SlotRunID(runID string, mode SemMode, k int) string {
	return runID + "\x00" + string(mode) + " " + strconv.Itoa(k)
}

// ParseSlotRunID undoes SlotRunID; ok is false for any other run id.
func ParseSlotRunID(id string) (base string, mode SemMode, slot int, ok bool) {
	base, rest, found := strings.Cut(id, "\x00")
	if !found {
		return id, "", 0, false
	}
	m, n, found := strings.Cut(rest, " ")
	k, err := strconv.Atoi(n)
	if !found || err != nil || k < 0 || (m != string(ModeMax) && m != string(ModeShared)) {
		return id, "", 0, false
	}
	return base, SemMode(m), k, true
}
