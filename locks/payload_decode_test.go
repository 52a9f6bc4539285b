package locks

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeEncoded holds the fast reader to encoding/json: whatever it
// accepts, json.Unmarshal accepts too, with the same result. (What it
// refuses goes to json.Unmarshal anyway.)
func FuzzDecodeEncoded(f *testing.F) {
	for _, p := range []Payload{
		{RunID: "nightly", LockID: "0123abcd", Pid: 4242, CreatedAt: 1.7e9 + 0.25, ExpiresAt: 1.7e9 + 30.5,
			Host: "vm", BootID: "e3bd454d", PidNS: 4026531836, PidStart: 987654, Command: "sh -c 'echo hi'", FencingToken: 7, Hold: true},
		{RunID: "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028é", LockID: "l", Pid: -1, CreatedAt: 1e-7, ExpiresAt: 1e21},
	} {
		f.Add(p.Encode())
	}
	f.Add([]byte(`{"run_id":"r","lock_id":"l","pid":1,"created_at":1,"expires_at":2}`))
	f.Add([]byte(`{"run_id": "r", "lock_id": "l", "pid": 1, "created_at": 1.5, "expires_at": 2.5}`)) // Python's json.dumps
	f.Add([]byte(`{"run_id":"\ud83d\ude00","lock_id":"l","pid":1e2,"created_at":-0.0,"expires_at":1E+2,"hold":true}` + "\n\t "))
	f.Add([]byte(`{"run_id":"r","lock_id":"l","pid":01,"created_at":1.,"expires_at":1e999}`))
	f.Add([]byte("{\"run_id\":\"\xff\",\"lock_id\":\"l\",\"pid\":1,\"created_at\":1,\"expires_at\":2}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := decodeEncoded(data)
		if !ok {
			return
		}
		var want Payload
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("decodeEncoded accepted what encoding/json refuses (%v): %q", err, data)
		}
		if got != want {
			t.Fatalf("decodeEncoded(%q)\n got %+v\nwant %+v", data, got, want)
		}
	})
}

// Every payload withlock writes takes the fast path: a waiter never pays
// for encoding/json on withlock's own locks.
func TestDecodeEncodedReadsWhatEncodeWrites(t *testing.T) {
	self, err := SelfIdentity()
	if err != nil {
		t.Fatal(err)
	}
	p := Payload{RunID: "nightly <db> & co", LockID: randomID(), Pid: self.Pid, CreatedAt: 1796003097.123456,
		ExpiresAt: 1796003127.123456, Host: self.Host, BootID: self.BootID, PidNS: self.PidNS, PidStart: self.PidStart,
		Command: "sh -c 'backup --to \"/mnt/x\"\n'\t\u2028", FencingToken: 42, Hold: true}
	got, ok := decodeEncoded(p.Encode())
	if !ok {
		t.Fatalf("the fast path refused %s", p.Encode())
	}
	if got != p {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, p)
	}
	// And a payload in another layout is not taken for ours.
	if _, ok := decodeEncoded([]byte(`{"run_id": "r", "lock_id": "l", "pid": 1, "created_at": 1.5, "expires_at": 2.5}`)); ok {
		t.Fatal("the fast path took a payload with spaces")
	}
}
