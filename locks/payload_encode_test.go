package locks

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// FuzzPayloadEncode holds the hand-written Encode to json.Marshal's bytes
// for any payload: strings with every kind of escape and invalid UTF-8,
// zero fields (omitempty), the hold flag, and floats in both notations.
func FuzzPayloadEncode(f *testing.F) {
	f.Add("nightly", "0123abcd", 4242, 1.7e9+0.25, 1.7e9+30.5, "vm", "e3bd454d", uint64(4026531836), uint64(987654), "sh -c 'echo hi'", uint64(7), true)
	f.Add("", "", 0, 0.0, 1e-7, "", "", uint64(0), uint64(0), "", uint64(0), false)
	f.Add("a\"b\\c\n\r\t\b\f\x00\x1f<>&", "\u2028\u2029é", -1, -1e21, 123456789012345678901234.0, "\xff\xfe", "日本", uint64(math.MaxUint64), uint64(1), "x\x7fy", uint64(math.MaxUint64), true)
	f.Add("r", "l", 1, 5e-324, math.MaxFloat64, "h", "b", uint64(1), uint64(2), "c", uint64(3), false)
	f.Fuzz(func(t *testing.T, runID, lockID string, pid int, created, expires float64, host, boot string, ns, start uint64, command string, token uint64, hold bool) {
		if !finite(created) || !finite(expires) {
			t.Skip("json.Marshal refuses non-finite floats")
		}
		p := Payload{RunID: runID, LockID: lockID, Pid: pid, CreatedAt: created, ExpiresAt: expires,
			Host: host, BootID: boot, PidNS: ns, PidStart: start, Command: command, FencingToken: token, Hold: hold}
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		got := p.Encode()
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode differs from json.Marshal:\n got %s\nwant %s", got, want)
		}
		// What Encode writes, the fast reader reads, as encoding/json does
		// (invalid UTF-8 in p's strings was written as U+FFFD).
		var back Payload
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if fast, ok := decodeEncoded(got); !ok || fast != back {
			t.Fatalf("decodeEncoded(%s) = %+v, %v; want %+v", got, fast, ok, back)
		}
	})
}
