package scope

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/codec/*.golden with the oracle's output")

// codecCases are inputs where a hand-written JSON reader most easily
// parts from encoding/json: duplicate keys, escapes, surrogates, invalid
// UTF-8, numbers at the edges of their types, nulls, keys that differ only
// in case, trailing data, depth. Each goes through sameAsOracle, and seeds
// the fuzz corpus.
var codecCases = []string{
	``, ` `, `null`, `{}`, ` {} `, "{}\n\n", `{}x`, `{},`, `[]`, `"x"`, `1`, `true`, `{"a":1}{}`,
	`{"allocations":null}`, `{"allocations":[]}`, `{"allocations":{}}`, `{"allocations":"x"}`, `{"allocations":[null]}`,
	`{"allocations":[1]}`, `{"allocations":[[]]}`, `{"allocations":[{}]}`, `{"allocations":[{"name":"a"}]}`,
	`{"allocations":[{"name":"a","pid":1}]}`, `{"allocations":[{"name":"a","pid":-0}]}`, `{"allocations":[{"name":"a","pid":-1}]}`,
	`{"allocations":[{"name":"a","pid":1.0}]}`, `{"allocations":[{"name":"a","pid":1e2}]}`, `{"allocations":[{"name":"a","pid":01}]}`,
	`{"allocations":[{"name":"a","pid":9223372036854775807}]}`, `{"allocations":[{"name":"a","pid":9223372036854775808}]}`,
	`{"allocations":[{"name":"a","pid":1,"pid_start":18446744073709551615}]}`, `{"allocations":[{"name":"a","pid":1,"pid_start":18446744073709551616}]}`,
	`{"allocations":[{"name":"a","pid":1,"pid_start":-0}]}`, `{"allocations":[{"name":"a","pid":1,"pid_start":1.5}]}`,
	`{"allocations":[{"name":"a","pid":1,"created_at":1e400}]}`, `{"allocations":[{"name":"a","pid":1,"created_at":1e-400}]}`,
	`{"allocations":[{"name":"a","pid":1,"created_at":-0.0}]}`, `{"allocations":[{"name":"a","pid":1,"created_at":1E+21}]}`,
	`{"allocations":[{"name":"a","pid":1,"created_at":0.000001}]}`, `{"allocations":[{"name":"a","pid":1,"created_at":1.}]}`,
	`{"allocations":[{"name":"a","pid":1,"created_at":.5}]}`, `{"allocations":[{"name":"a","pid":1,"created_at":"1"}]}`,
	`{"allocations":[{"name":"a","pid":"x","pid":1}]}`, `{"allocations":[{"name":"a","pid":1,"pid":"x"}]}`,
	`{"allocations":[{"name":"a","pid":1,"pid":null}]}`, `{"allocations":5,"allocations":[]}`, `{"allocations":[],"allocations":5}`,
	`{"allocations":[{"name":"a","pid":1}],"allocations":null}`,
	`{"allocations":[{"name":"a","pid":1,"Name":"b","NAME":"c","x":1,"x":[2]}]}`, `{"Allocations":[1],"allocations":[]}`,
	`{"allocations":[{"n\u0061me":"a","pid":1}]}`, `{"\u0061llocations":[{"name":"a","pid":1}]}`,
	`{"allocations":[{"name":"\ud83d\ude00 \ud800 \udc00 \ud800\u0041 \u00e9\n\t\"\\\/\b\f\r","pid":1}]}`,
	"{\"allocations\":[{\"name\":\"\xff\xfe caf\xc3\xa9 \xe2\x80\xa8 \xed\xa0\x80\",\"pid\":1}]}",
	"{\"allocations\":[{\"name\":\"a\x01\",\"pid\":1}]}", "{\"allocations\":[{\"name\":\"a\u007f\",\"pid\":1}]}",
	`{"allocations":[{"name":"a\x","pid":1}]}`, `{"allocations":[{"name":"a\u12","pid":1}]}`, `{"allocations":[{"name":"a\'","pid":1}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":null,"scope_deny":[],"delegated_from":null,"socket":null}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":[null]}]}`, `{"allocations":[{"name":"a","pid":1,"scope_allow":[1]}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":["/a:write","/b:read:recursive"]}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":["a:write"]}]}`, `{"allocations":[{"name":"a","pid":1,"delegated_from":""}]}`,
	`{"allocations":[{"name":"a","pid":1,"delegated_from":5}]}`, `{"allocations":[{"name":"a","pid":1,"socket":true}]}`,
	`{"allocations":[{"name":"a","pid":1,"<&>":"<&>","k\u2028":1}],"v\u003c":{"x":[true,false,null,-1.5e-3]}}`,
	"{\"allocations\" : [ {\"name\" :\"a\" ,\"pid\":1 } ] ,\r\n\t\"x\":[ 1 , {} ] }",
	`{"allocations":[{"name":"a","pid":1},]}`, `{"allocations":[{"name":"a","pid":1,}]}`, `{"allocations":[{"name":"a" "pid":1}]}`,
	`{"allocations":[{"name":"a","pid":1}]`, `{"allocations":[{"name":"a","pid":tru}]}`, `{"a":nul}`, `{"a":-}`, `{"a":1e}`, `{"a":[1 2]}`,
	`{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
	`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`,
	"\ufeff{}", "{\"a\":\"\x00\"}", `{"a":"` + "\u2029" + `"}`,
	// The form Encode writes (the fast path) at its edges.
	`{"allocations": [
{"name":"a","pid":-0,"socket":"","scope_allow":[],"delegated_from":"","scope_deny":["/b:write","/c:read:recursive"],"pid_start":0,"created_at":-0},
{"name":"b","pid":2,"socket":"s","scope_allow":["/b:write"],"delegated_from":"a","scope_deny":[],"pid_start":18446744073709551615,"created_at":1e-7}
]}
`,
	`{"allocations": [{"name":"a","pid":1,"socket":"","scope_allow":[],"delegated_from":null,"scope_deny":[],"pid_start":0,"created_at":1e400}]}`,
	`{"allocations": [{"name":"","pid":1,"socket":"","scope_allow":[],"delegated_from":null,"scope_deny":[],"pid_start":0,"created_at":0}]}`,
	`{"allocations": [{"name":"a","pid":1,"socket":"","scope_allow":["x"],"delegated_from":null,"scope_deny":[],"pid_start":0,"created_at":0}]}`,
	`{"allocations": [{"name":"a","pid":1,"socket":"","scope_allow":[],"delegated_from":null,"scope_deny":[],"pid_start":0,"created_at":0,"x":1}]}`,
	`{"allocations": [{"name":"a","pid":1,"socket":"","scope_allow":[],"delegated_from":null,"scope_deny":[],"pid_start":0,"created_at":0},]}`,
	`{"allocations": [{"name":"a","pid":99999999999999999999,"socket":"","scope_allow":[],"delegated_from":null,"scope_deny":[],"pid_start":0,"created_at":0}]}`,
	`{"allocations": [{"name":"a","pid":1,"socket":"","scope_allow":[],"delegated_from":null,"scope_deny":[],"pid_start":-1,"created_at":0}]}`,
}

// sameAsOracle decodes data with DecodeTable and with encoding/json (the
// oracle) and fails t unless both accept it or both refuse it, with equal
// tables, which both encoders write to the same bytes. A refusal is a
// *DecodeError with an offset within data.
func sameAsOracle(t *testing.T, data []byte) (*Table, error) {
	t.Helper()
	got, err := DecodeTable(data)
	want, werr := oracleDecode(data)
	if (err == nil) != (werr == nil) {
		t.Fatalf("DecodeTable: %v\nencoding/json: %v\ninput %q", err, werr, data)
	}
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) || de.Offset < 0 || de.Offset > len(data) {
			t.Fatalf("error %v (%T): want a *DecodeError within the %d bytes", err, err, len(data))
		}
		return nil, err
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeTable: %#v\nencoding/json: %#v\ninput %q", got, want, data)
	}
	if out, wout := got.Encode(), oracleEncode(want); !bytes.Equal(out, wout) {
		t.Fatalf("Encode:\n%s\njson.Encoder:\n%s\ninput %q", out, wout, data)
	}
	return got, nil
}

func TestCodecMatchesOracle(t *testing.T) {
	for _, in := range codecCases {
		sameAsOracle(t, []byte(in))
	}
	for _, n := range []int{0, 1, 100} {
		sameAsOracle(t, benchTable(n).Encode())
		pretty, err := json.MarshalIndent(map[string]any{"allocations": benchTable(n).Allocations}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		sameAsOracle(t, pretty)
	}
}

// TestCodecFastPathReadsWhatEncodeWrites: every allocation Encode writes
// is read by the fast path (canonical), not the general one: a change to
// either that parts them would make every start slower, silently.
func TestCodecFastPathReadsWhatEncodeWrites(t *testing.T) {
	tab := benchTable(3)
	tab.Allocations[1].DelegatedFrom = tab.Allocations[0].Name
	tab.Allocations[0].ScopeDeny = tab.Allocations[1].ScopeAllow
	tab.Allocations[2].ScopeAllow = append(tab.Allocations[2].ScopeAllow, "/etc:read")
	for _, line := range strings.Split(string(tab.Encode()), "\n")[1:4] {
		d := &decoder{s: strings.TrimSuffix(line, ",")}
		if _, ok := d.canonical(); !ok || d.i != len(d.s) {
			t.Errorf("fast path refused %s (at byte %d)", line, d.i)
		}
	}
}

// FuzzEncodeScopeRegistry: whatever the values (names and paths with
// quotes, control bytes, invalid UTF-8, U+2028; any number), Encode writes
// what json.Encoder writes, and what it writes reads back to the same
// values (strings as valid UTF-8, as json reads them).
func FuzzEncodeScopeRegistry(f *testing.F) {
	f.Add("abc123", "/run/x.sock", "/p:write:recursive", "abc", 42, uint64(7), 1700000000.25, "k", `{"a":[1]}`)
	f.Add("<a&b>\u2028", "\x00\xff\"\\", "/x<y>:read", "", -1, uint64(math.MaxUint64), 1e21, "<&>", `"\u003c"`)
	f.Add("a", "", "/", "b", 0, uint64(0), 1e-7, "", `null`)
	f.Fuzz(func(t *testing.T, name, socket, scope, parent string, pid int, start uint64, created float64, key, raw string) {
		if math.IsNaN(created) || math.IsInf(created, 0) || !json.Valid([]byte(raw)) {
			return // neither a registry value nor JSON
		}
		var compact bytes.Buffer
		json.Compact(&compact, []byte(raw))
		a := Allocation{Name: name, PID: pid, PIDStart: start, Socket: socket, ScopeAllow: []string{scope, scope + "x"},
			ScopeDeny: []string{scope}, DelegatedFrom: parent, CreatedAt: created,
			extra: map[string]json.RawMessage{key: compact.Bytes(), "z" + key: json.RawMessage(`1`)}}
		tab := &Table{Allocations: []Allocation{a, {Name: "b", PID: 2}}, extra: map[string]json.RawMessage{key: compact.Bytes()}}
		out, want := tab.Encode(), oracleEncode(tab)
		if !bytes.Equal(out, want) {
			t.Fatalf("Encode:\n%q\njson.Encoder:\n%q", out, want)
		}
		if !json.Valid(out) {
			t.Fatalf("Encode wrote invalid JSON: %q", out)
		}
		d := &decoder{s: string(out)}
		back, err := d.document()
		if _, ok := err.(*DecodeError); err != nil && !ok {
			t.Fatalf("read back: %v", err)
		}
		if err == nil && back.Allocations[0].CreatedAt != created {
			t.Fatalf("created_at %v read back as %v", created, back.Allocations[0].CreatedAt)
		}
	})
}

// TestCodecGolden: registries as other programs write them — the seed's
// example, pretty-printed JSON with foreign fields and escapes — are
// rewritten exactly as encoding/json rewrote them (the .golden files were
// written by the oracle: go test -run TestCodecGolden -update), and the
// rewrite reads back to itself.
func TestCodecGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/codec/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/codec/*.json: %v", err)
	}
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		golden := strings.TrimSuffix(in, ".json") + ".golden"
		if *updateGolden {
			tab, err := oracleDecode(data)
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if err := os.WriteFile(golden, oracleEncode(tab), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		tab, err := sameAsOracle(t, data)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if out := tab.Encode(); !bytes.Equal(out, want) {
			t.Errorf("%s rewritten as\n%s\nwant (%s)\n%s", in, out, golden, want)
		}
		again, err := sameAsOracle(t, want)
		if err != nil || len(again.Allocations) != len(tab.Allocations) || !bytes.Equal(again.Encode(), want) {
			t.Errorf("%s does not read back to the registry it came from: %v", golden, err)
		}
	}
}

// TestDecodeErrorNamesOffsetAndPath: a corrupt registry's error says
// where: the byte offset and the path of the value.
func TestDecodeErrorNamesOffsetAndPath(t *testing.T) {
	for _, tt := range []struct {
		in     string
		offset int
		path   string
		msg    string
	}{
		{``, 0, "", "not a JSON object"},
		{`[]`, 0, "", "not a JSON object"},
		{`{"allocations":[{"name":"a","pid":1}`, 36, "", "unexpected end"},
		{`{"allocations":[{"name":"a","pid":1},{"name":"b","pid":"2"}]}`, 55, "allocations[1].pid", `want an integer, got "2"`},
		{`{"allocations":[{"name":"a","pid":1},{"pid":2}]}`, 37, "allocations[1]", "name: missing"},
		{`{"allocations":[{"name":"a","pid":1,"scope_allow":["/a:write",3]}]}`, 50, "allocations[0].scope_allow", "element 1: want a string, got 3"},
		{`{"allocations":[{"name":"a","pid":1,"scope_allow":["a:rw"]}]}`, 16, "allocations[0]", `malformed scope "a:rw"`},
		{`{"allocations":[{"name":"a","pid":1}]} x`, 39, "", "after the document"},
		{"{\"allocations\":[{\"name\":\"a\x01\"}]}", 26, "", "in string literal"},
		{`{"allocations":{}}`, 15, "allocations", "want an array or null"},
	} {
		_, err := DecodeTable([]byte(tt.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("DecodeTable(%s): %v, want a *DecodeError", tt.in, err)
			continue
		}
		if de.Offset != tt.offset || de.Path != tt.path || !strings.Contains(de.Msg, tt.msg) {
			t.Errorf("DecodeTable(%s): offset %d path %q msg %q; want %d %q %q", tt.in, de.Offset, de.Path, de.Msg, tt.offset, tt.path, tt.msg)
		}
		if want := "byte " + strconv.Itoa(tt.offset); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q does not start with %q", err, want)
		}
	}
}

// TestCorruptRegistryErrorNamesFileAndOffset: what a start reports about a
// corrupt registry (exit 73) names the file, the byte and the value, and
// the way out; nothing is written.
func TestCorruptRegistryErrorNamesFileAndOffset(t *testing.T) {
	dir := t.TempDir()
	f := &Registry{Path: filepath.Join(dir, "scope.lock")}
	data := []byte(`{"allocations":[{"name":"a","pid":1},{"name":"b","pid":"2"}]}` + "\n")
	if err := os.WriteFile(f.Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	me := self(t)
	_, err := f.Register(context.Background(), me.request("x", "/x:write"))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Register over a corrupt registry: %v, want ErrCorrupt", err)
	}
	for _, want := range []string{f.Path, "byte 55", "allocations[1].pid", "withlock break --scopes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if got, _ := os.ReadFile(f.Path); !bytes.Equal(got, data) {
		t.Errorf("the corrupt registry was rewritten: %q", got)
	}
}

// benchTable is n allocations as a busy machine has them.
func benchTable(n int) *Table {
	t := &Table{Allocations: []Allocation{}}
	for i := range n {
		t.Allocations = append(t.Allocations, Allocation{
			Name: fmt.Sprintf("holder%05d", i), PID: 1000 + i, PIDStart: 123456789,
			Socket:     "/run/withlock/holder" + strconv.Itoa(i) + ".sock",
			ScopeAllow: []string{"/bench/tree" + strconv.Itoa(i) + ":write:recursive"},
			ScopeDeny:  []string{}, CreatedAt: 1700000000.25 + float64(i),
		})
	}
	return t
}

// BenchmarkRegistryCodec: decode + encode of the registry alone, the codec
// against encoding/json.
func BenchmarkRegistryCodec(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		data := benchTable(n).Encode()
		b.Run(fmt.Sprintf("codec/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t, err := DecodeTable(data)
				if err != nil {
					b.Fatal(err)
				}
				t.Encode()
			}
		})
		b.Run(fmt.Sprintf("encoding-json/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t, err := oracleDecode(data)
				if err != nil {
					b.Fatal(err)
				}
				oracleEncode(t)
			}
		})
	}
}
