package locks

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/internal/jsontest"
)

// The payload round-trips through its encoding, and the seed's five fields
// are there under the seed's names, as numbers where the seed writes floats.
func TestPayloadEncodeRoundTrip(t *testing.T) {
	p := Payload{RunID: "nightly <db> & co", LockID: "7c0ad7a4b3e1f6d2a9c8b5e4f3a2d1c0", Pid: 4242, CreatedAt: 1796003097.123456,
		ExpiresAt: 1796003127.123456, Host: "vm", BootID: "e3bd454d", PidNS: 4026531836, PidStart: 987654,
		Command: "sh -c 'backup --to \"/mnt/x\"\n'\t\u2028", FencingToken: 42, Hold: true}
	enc, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(enc), "}\n") {
		t.Fatalf("encoding %q does not end in a newline", enc)
	}
	got, err := ParsePayload(enc)
	if err != nil || got != p {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, p)
	}
	var generic map[string]any
	if err := json.Unmarshal(enc, &generic); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"run_id", "lock_id", "pid", "created_at", "expires_at"} {
		if _, ok := generic[key]; !ok {
			t.Errorf("seed field %q missing from %s", key, enc)
		}
	}
	if _, ok := generic["created_at"].(float64); !ok {
		t.Errorf("created_at is %T, want a number", generic["created_at"])
	}
	// Zero values of withlock's own fields are left out, as a foreign
	// writer leaves them out.
	enc, err = Payload{RunID: "r", LockID: "l", Pid: 1, CreatedAt: 1, ExpiresAt: 2}.Encode()
	if err != nil || string(enc) != `{"run_id":"r","lock_id":"l","pid":1,"created_at":1,"expires_at":2}`+"\n" {
		t.Fatalf("minimal payload encodes as %q (%v)", enc, err)
	}
	if _, err := (Payload{LockID: "l", ExpiresAt: math.Inf(1)}).Encode(); err == nil {
		t.Fatal("an infinite expiry encoded")
	}
}

// The seed's Python writer (json.dumps: spaces after separators, maybe a
// different key order, maybe extra keys) is read; what the seed requires is
// required.
func TestParsePayloadSeedWriter(t *testing.T) {
	p, err := ParsePayload([]byte(`{"lock_id": "abc", "run_id": "r-42", "pid": 77, "created_at": 1.5, "expires_at": 31.5, "extra": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.RunID != "r-42" || p.LockID != "abc" || p.Pid != 77 || p.CreatedAt != 1.5 || p.ExpiresAt != 31.5 {
		t.Fatalf("parsed %+v", p)
	}
	for _, bad := range []string{"", "{", `{"run_id":"r","pid":1,"created_at":1,"expires_at":2}`, `{"run_id":"r","lock_id":"l","pid":1,"created_at":1}`, `[]`} {
		if _, err := ParsePayload([]byte(bad)); err == nil {
			t.Errorf("ParsePayload(%q) accepted", bad)
		}
	}
}

func TestEpochTimeFarFuture(t *testing.T) {
	now := time.Now()
	for _, sec := range []float64{1e12, 1e18, 1e300} {
		if got := epochTime(sec); !got.After(now) {
			t.Errorf("epochTime(%g) = %v: not in the future", sec, got)
		}
	}
	if got := epochTime(1_700_000_000.25); got.UnixNano() != 1_700_000_000_250_000_000 {
		t.Errorf("epochTime lost precision: %d", got.UnixNano())
	}
}

// Encode writes what encoding/json would write for the struct (the same
// members in the same order, the same values once decoded), for every
// field set and for each field left at its zero value: a field added to
// Payload without its line in Encode fails here.
func TestPayloadEncodeMatchesJSON(t *testing.T) {
	full := Payload{RunID: "r\x01\"\\<&>\u2028\xff", LockID: "l", Pid: 7, CreatedAt: 1796003097.123456, ExpiresAt: 1796003127.5,
		Host: "h", BootID: "b", PidNS: 1 << 40, PidStart: 99, Command: "c\td", FencingToken: 1<<63 + 5, Hold: true, Tree: true}
	cases := jsontest.EachZeroed(t, full)
	// With zerolog's global level disabling every event, encoding/json
	// writes it.
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	for _, level := range []zerolog.Level{zerolog.TraceLevel, zerolog.Disabled} {
		zerolog.SetGlobalLevel(level)
		for _, p := range cases {
			got, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := jsontest.Members(t, got), jsontest.Members(t, want); !reflect.DeepEqual(g, w) || !strings.HasSuffix(string(got), "}\n") {
				t.Errorf("level %v: Encode:\n %q\nencoding/json:\n %s", level, got, w)
			}
		}
	}
}
