package scope

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// seedRegistry is the example of seed 004, verbatim.
const seedRegistry = `{
  "allocations": [
    {
      "name": "abc123",
      "pid": 12345,
      "socket": "/run/insomnia/.../pod-a.sock",
      "scope_allow": ["/project/src:write:recursive"],
      "delegated_from": null
    },
    {
      "name": "def456",
      "pid": 12346,
      "socket": "/run/insomnia/.../pod-b.sock",
      "scope_allow": ["/project/src/core:write:recursive"],
      "delegated_from": "abc123"
    }
  ]
}`

func TestDecodeSeedRegistry(t *testing.T) {
	reg, err := DecodeTable([]byte(seedRegistry))
	if err != nil {
		t.Fatal(err)
	}
	want := []Allocation{
		{Name: "abc123", PID: 12345, Socket: "/run/insomnia/.../pod-a.sock", ScopeAllow: []string{"/project/src:write:recursive"}},
		{Name: "def456", PID: 12346, Socket: "/run/insomnia/.../pod-b.sock", ScopeAllow: []string{"/project/src/core:write:recursive"}, DelegatedFrom: "abc123"},
	}
	if !reflect.DeepEqual(reg.Allocations, want) {
		t.Fatalf("decoded %+v\nwant %+v", reg.Allocations, want)
	}
	// What withlock writes is what the seed's readers expect: the seed's
	// fields with the seed's JSON types, null for no parent.
	var generic struct {
		Allocations []map[string]any `json:"allocations"`
	}
	if err := json.Unmarshal(reg.Encode(), &generic); err != nil {
		t.Fatal(err)
	}
	a := generic.Allocations[0]
	if a["name"] != "abc123" || a["pid"] != 12345.0 || a["delegated_from"] != nil ||
		!reflect.DeepEqual(a["scope_allow"], []any{"/project/src:write:recursive"}) {
		t.Fatalf("encoded allocation %v", a)
	}
	if generic.Allocations[1]["delegated_from"] != "abc123" {
		t.Fatalf("encoded allocation %v", generic.Allocations[1])
	}
}

func TestDecodeKeepsUnknownFields(t *testing.T) {
	in := `{"version": 2, "owner": {"team": "pods", "ids": [1, 2]},
	  "allocations": [{"name": "x", "pid": 7, "socket": null, "scope_allow": [], "delegated_from": null,
	    "pod_kind": "worker", "Name": "case-differs", "labels": {"a": "b\n"}}]}`
	reg, err := DecodeTable([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	reg.Allocations[0].ScopeAllow = []string{"/a:write"} // a change, as a rewrite would make
	out := reg.Encode()
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("encoded registry is not JSON: %v\n%s", err, out)
	}
	if got["version"] != 2.0 || !reflect.DeepEqual(got["owner"], map[string]any{"team": "pods", "ids": []any{1.0, 2.0}}) {
		t.Errorf("top-level unknown fields lost: %s", out)
	}
	a := got["allocations"].([]any)[0].(map[string]any)
	if a["pod_kind"] != "worker" || a["Name"] != "case-differs" || a["name"] != "x" ||
		!reflect.DeepEqual(a["labels"], map[string]any{"a": "b\n"}) {
		t.Errorf("allocation unknown fields lost: %s", out)
	}
	if !reflect.DeepEqual(a["scope_allow"], []any{"/a:write"}) {
		t.Errorf("change lost: %s", out)
	}
}

func TestDecodeRejectsWhatItCannotReasonAbout(t *testing.T) {
	for _, in := range []string{
		``, `null`, `[]`, `"x"`, `{`, `{"allocations": {}}`, `{"allocations": [1]}`,
		`{"allocations": [null]}`,
		`{"allocations": [{"pid": 1}]}`,                // no name
		`{"allocations": [{"name": "", "pid": 1}]}`,    // empty name
		`{"allocations": [{"name": "a"}]}`,             // no pid
		`{"allocations": [{"name": "a", "pid": "1"}]}`, // pid a string
		`{"allocations": [{"name": "a", "pid": 1.5}]}`, // pid not integer
		`{"allocations": [{"name": "a", "pid": 1, "pid_start": -1}]}`,
		`{"allocations": [{"name": 5, "pid": 1}]}`,
		`{"allocations": [{"name": "a", "pid": 1, "scope_allow": "/a:write"}]}`,
		`{"allocations": [{"name": "a", "pid": 1, "scope_allow": ["a:write"]}]}`,
		`{"allocations": [{"name": "a", "pid": 1, "scope_deny": ["/a:rw"]}]}`,
		`{"allocations": [{"name": "a", "pid": 1, "delegated_from": 3}]}`,
		`{"allocations": [{"name": "a", "pid": 1, "created_at": "now"}]}`,
		`{"allocations": []} trailing`,
	} {
		if _, err := DecodeTable([]byte(in)); err == nil {
			t.Errorf("DecodeTable(%s) accepted it", in)
		}
	}
}

func TestDecodeAcceptsSparseForeignEntries(t *testing.T) {
	for _, in := range []string{
		`{}`, `{"allocations": null}`, `{"allocations": []}`,
		`{"allocations": [{"name": "a", "pid": 1}]}`,
		`{"allocations": [{"name": "a", "pid": 1, "pid_start": null, "socket": null, "scope_allow": null, "scope_deny": null, "delegated_from": null, "created_at": null}]}`,
		`{"allocations": [{"name": "caf\u00e9 \"q\"", "pid": 1, "socket": "/s\\x"}]}`,
	} {
		reg, err := DecodeTable([]byte(in))
		if err != nil {
			t.Errorf("DecodeTable(%s): %v", in, err)
			continue
		}
		assertEncodeStable(t, reg)
	}
}

// assertEncodeStable: what is written decodes to the same registry and
// encodes to the same bytes again.
func assertEncodeStable(t *testing.T, reg *Table) {
	t.Helper()
	out := reg.Encode()
	again, err := DecodeTable(out)
	if err != nil {
		t.Fatalf("encoded registry does not decode: %v\n%s", err, out)
	}
	if out2 := again.Encode(); string(out2) != string(out) {
		t.Fatalf("encoding not stable:\n%s\n---\n%s", out, out2)
	}
	if len(again.Allocations) != len(reg.Allocations) {
		t.Fatalf("allocations %d → %d", len(reg.Allocations), len(again.Allocations))
	}
}

func TestEncodeIsOneAllocationPerLine(t *testing.T) {
	reg := &Table{Allocations: []Allocation{{
		Name: "abc123", PID: 42, PIDStart: 99, Socket: "", ScopeAllow: []string{"/p:write:recursive"},
		ScopeDeny: []string{}, CreatedAt: 1700000000.5,
	}, {
		Name: "def456", PID: 43, ScopeAllow: []string{"/p/q:write"}, DelegatedFrom: "abc123",
	}}}
	want := `{"allocations": [
{"name":"abc123","pid":42,"socket":"","scope_allow":["/p:write:recursive"],"delegated_from":null,"scope_deny":[],"pid_start":99,"created_at":1700000000.5},
{"name":"def456","pid":43,"socket":"","scope_allow":["/p/q:write"],"delegated_from":"abc123","scope_deny":[],"pid_start":0,"created_at":0}
]}
`
	if got := string(reg.Encode()); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := string((&Table{}).Encode()); got != "{\"allocations\": []}\n" {
		t.Fatalf("empty registry encodes as %q", got)
	}
	if got := string((&Table{Allocations: []Allocation{{Name: "<a&b>", PID: 1, ScopeAllow: []string{"/x<y>:write"}}}}).Encode()); !strings.Contains(got, `"<a&b>"`) || !strings.Contains(got, `"/x<y>:write"`) {
		t.Fatalf("names and paths are not written as they are: %s", got)
	}
}
