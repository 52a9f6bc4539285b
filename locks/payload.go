package locks

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// MaxPayload is the largest lock file that is parsed; a larger one is
// treated as corrupt.
const MaxPayload = 64 << 10

// Payload is the JSON inside a run lock file. The first five fields are the
// seed writer's schema (epoch seconds as floats), so a lock written by that
// program is read here and ours is read there; the rest is what withlock
// needs to judge liveness on this host and to fence.
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
	// (see hold.go).
	Hold bool `json:"hold,omitempty"`
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
	p, ok := decodeEncoded(data)
	if !ok {
		if err := json.Unmarshal(data, &p); err != nil {
			return Payload{}, fmt.Errorf("%w: %v", errBadPayload, err)
		}
	}
	if p.LockID == "" || p.ExpiresAt <= 0 {
		return Payload{}, fmt.Errorf("%w: missing lock_id or expires_at", errBadPayload)
	}
	return p, nil
}

// Encode renders the payload, exactly as json.Marshal would, plus a
// newline. It is written out by hand because every acquisition encodes one
// payload in a fresh process, where json.Marshal's first call builds its
// reflection cache: ~50 µs, a tenth of withlock's own start-up.
// FuzzPayloadEncode holds the two to the same bytes.
func (p Payload) Encode() []byte {
	if !finite(p.CreatedAt) || !finite(p.ExpiresAt) {
		// json.Marshal refuses these; our clock never produces them.
		panic(fmt.Sprintf("lock payload with a non-finite time: %v, %v", p.CreatedAt, p.ExpiresAt))
	}
	b := make([]byte, 0, 320+len(p.RunID)+len(p.Command)+len(p.Host))
	b = append(b, `{"run_id":`...)
	b = appendPayloadString(b, p.RunID)
	b = append(b, `,"lock_id":`...)
	b = appendPayloadString(b, p.LockID)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(p.Pid), 10)
	b = append(b, `,"created_at":`...)
	b = appendJSONFloat(b, p.CreatedAt)
	b = append(b, `,"expires_at":`...)
	b = appendJSONFloat(b, p.ExpiresAt)
	b = appendStringField(b, `,"host":`, p.Host)
	b = appendStringField(b, `,"boot_id":`, p.BootID)
	b = appendUintField(b, `,"pid_ns":`, p.PidNS)
	b = appendUintField(b, `,"pid_start":`, p.PidStart)
	b = appendStringField(b, `,"command":`, p.Command)
	b = appendUintField(b, `,"fencing_token":`, p.FencingToken)
	if p.Hold {
		b = append(b, `,"hold":true`...)
	}
	return append(b, "}\n"...)
}

// appendStringField and appendUintField write an omitempty field: key
// (with its leading comma) and value, or nothing for a zero value.
func appendStringField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendPayloadString(append(b, key...), v)
}

func appendUintField(b []byte, key string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), v, 10)
}

func finite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

// appendJSONFloat formats f as encoding/json does a float64: the shortest
// decimal that round-trips, in exponent form only below 1e-6 or from 1e21.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendPayloadString quotes s exactly as encoding/json does (HTML-safe):
// control characters, quote and backslash escaped, <, > and & as \u00XX,
// invalid UTF-8 as \ufffd, and U+2028/U+2029 escaped. (The scope registry's
// appendJSONString escapes less; its format is its own.)
func appendPayloadString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Created and Expires convert the epoch-second floats.
func (p Payload) Created() time.Time { return epochTime(p.CreatedAt) }
func (p Payload) Expires() time.Time { return epochTime(p.ExpiresAt) }

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

func epochSeconds(t time.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}
