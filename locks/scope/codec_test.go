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

var updateGolden = flag.Bool("update", false, "rewrite testdata/codec/*.golden with Encode's output")

// codecCases are inputs at the edges of the registry's format: duplicate
// keys, escapes, surrogates, invalid UTF-8, numbers at the edges of their
// types, nulls, keys that differ only in case, trailing data, depth. Each
// goes through roundTrip, and seeds the fuzz corpus.
var codecCases = []string{
	``, ` `, `null`, `{}`, ` {} `, "{}\n\n", `{}x`, `{},`, `[]`, `"x"`, `1`, `true`, `{"a":1}{}`,
	`{"allocations":null}`, `{"allocations":[]}`, `{"allocations":{}}`, `{"allocations":"x"}`, `{"allocations":[null]}`,
	`{"allocations":[1]}`, `{"allocations":[[]]}`, `{"allocations":[{}]}`, `{"allocations":[{"name":"a"}]}`,
	`{"allocations":[{"name":"a","pid":1}]}`, `{"allocations":[{"name":"a","pid":-0}]}`, `{"allocations":[{"name":"a","pid":-1}]}`,
	`{"allocations":[{"name":"a","pid":1.0}]}`, `{"allocations":[{"name":"a","pid":1e2}]}`, `{"allocations":[{"name":"a","pid":01}]}`,
	`{"allocations":[{"name":"a","pid":9223372036854775807}]}`, `{"allocations":[{"name":"a","pid":9223372036854775808}]}`,
	`{"allocations":[{"name":"a","pid":1,"pid_start":18446744073709551615}]}`, `{"allocations":[{"name":"a","pid":1,"pid_start":18446744073709551616}]}`,
	`{"allocations":[{"name":"a","pid":1,"created_at":1e400}]}`, `{"allocations":[{"name":"a","pid":1,"created_at":-0.0}]}`,
	`{"allocations":[{"name":"a","pid":1,"created_at":1E+21}]}`, `{"allocations":[{"name":"a","pid":1,"created_at":0.000001}]}`,
	`{"allocations":[{"name":"a","pid":"x","pid":1}]}`, `{"allocations":[{"name":"a","pid":1,"pid":"x"}]}`,
	`{"allocations":[{"name":"a","pid":1,"pid":null}]}`, `{"allocations":5,"allocations":[]}`,
	`{"allocations":[{"name":"a","pid":1,"Name":"b","NAME":"c","x":1,"x":[2]}]}`, `{"Allocations":[1],"allocations":[]}`,
	`{"allocations":[{"name":"\ud83d\ude00 \ud800 \udc00 \ud800\u0041 \u00e9\n\t\"\\\/\b\f\r","pid":1}]}`,
	"{\"allocations\":[{\"name\":\"\xff\xfe caf\xc3\xa9 \xe2\x80\xa8 \xed\xa0\x80\",\"pid\":1}]}",
	"{\"allocations\":[{\"name\":\"a\x01\",\"pid\":1}]}", `{"allocations":[{"name":"a\x","pid":1}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":null,"scope_deny":[],"delegated_from":null,"socket":null}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":[null]}]}`, `{"allocations":[{"name":"a","pid":1,"scope_allow":[1]}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":["/a:write","/b:read:recursive"]}]}`,
	`{"allocations":[{"name":"a","pid":1,"scope_allow":["a:write"]}]}`, `{"allocations":[{"name":"a","pid":1,"delegated_from":""}]}`,
	`{"allocations":[{"name":"a","pid":1,"<&>":"<&>","k\u2028":1}],"v\u003c":{"x":[true,false,null,-1.5e-3]}}`,
	"{\"allocations\" : [ {\"name\" :\"a\" ,\"pid\":1 } ] ,\r\n\t\"x\":[ 1 , {} ] }",
	`{"allocations":[{"name":"a","pid":1},]}`, `{"allocations":[{"name":"a","pid":1}]`, `{"a":nul}`,
	`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	"\ufeff{}", "{\"a\":\"\x00\"}",
}

// roundTrip decodes data and, when it is a registry, checks that what
// Encode writes is JSON that decodes to the same table and encodes to the
// same bytes again.
func roundTrip(t *testing.T, data []byte) (*Table, error) {
	t.Helper()
	tab, err := DecodeTable(data)
	if err != nil {
		if tab != nil || err.Error() == "" {
			t.Fatalf("DecodeTable(%q) = %v, %v", data, tab, err)
		}
		return nil, err
	}
	out := tab.Encode()
	if !json.Valid(out) {
		t.Fatalf("Encode wrote invalid JSON: %q", out)
	}
	again, err := DecodeTable(out)
	if err != nil {
		t.Fatalf("encoded registry does not decode: %v\n%s", err, out)
	}
	if !bytes.Equal(again.Encode(), out) {
		t.Fatalf("encoding not stable:\n%s", out)
	}
	if len(again.Allocations) != len(tab.Allocations) {
		t.Fatalf("allocations %d → %d", len(tab.Allocations), len(again.Allocations))
	}
	return tab, nil
}

func TestCodecRoundTrip(t *testing.T) {
	for _, in := range codecCases {
		roundTrip(t, []byte(in))
	}
	for _, n := range []int{0, 1, 100} {
		roundTrip(t, benchTable(n).Encode())
	}
	// Keys match exactly: "Name" is a foreign field, not the name.
	tab, err := roundTrip(t, []byte(`{"allocations":[{"name":"a","pid":1,"Name":"b"}],"Allocations":[1]}`))
	if err != nil || tab.Allocations[0].Name != "a" || string(tab.Allocations[0].extra["Name"]) != `"b"` || tab.extra["Allocations"] == nil {
		t.Fatalf("decoded %+v, %v", tab, err)
	}
}

// FuzzEncodeScopeRegistry: whatever the values (names and paths with
// quotes, control bytes, invalid UTF-8, U+2028; any number), Encode writes
// JSON, and what it writes reads back to the same numbers and kept fields.
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
		out := tab.Encode()
		if !json.Valid(out) {
			t.Fatalf("Encode wrote invalid JSON: %q", out)
		}
		back, err := DecodeTable(out)
		if err != nil {
			return // a name or scope the registry refuses (empty, malformed)
		}
		got := back.Allocations[0]
		if got.PID != pid || got.PIDStart != start || got.CreatedAt != created || !bytes.Equal(got.extra["z"+key], []byte(`1`)) {
			t.Fatalf("read back as %+v from %q", got, out)
		}
	})
}

// TestCodecGolden: registries as other programs write them — the seed's
// example, pretty-printed JSON with foreign fields and escapes — are
// rewritten exactly as the .golden files say (go test -run TestCodecGolden
// -update rewrites them), and the rewrite reads back to itself.
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
		tab, err := roundTrip(t, data)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		golden := strings.TrimSuffix(in, ".json") + ".golden"
		if *updateGolden {
			if err := os.WriteFile(golden, tab.Encode(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out := tab.Encode(); !bytes.Equal(out, want) {
			t.Errorf("%s rewritten as\n%s\nwant (%s)\n%s", in, out, golden, want)
		}
	}
}

// TestDecodeErrorSaysWhere: a corrupt registry's error says where: the
// byte of a syntax error, the path of a value of the wrong shape.
func TestDecodeErrorSaysWhere(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, "byte 0: unexpected end of JSON input"},
		{`[]`, "not a JSON object"},
		{`{"allocations":[{"name":"a","pid":1}`, "byte 36: unexpected end"},
		{`{"allocations":[{"name":"a","pid":1},{"name":"b","pid":"2"}]}`, "allocations[1].pid: json: cannot unmarshal string"},
		{`{"allocations":[{"name":"a","pid":1},{"pid":2}]}`, "allocations[1].name: missing"},
		{`{"allocations":[{"name":"a","pid":1,"scope_allow":["/a:write",3]}]}`, "allocations[0].scope_allow: json: cannot unmarshal number"},
		{`{"allocations":[{"name":"a","pid":1,"scope_allow":["a:rw"]}]}`, `allocations[0]: malformed scope "a:rw"`},
		{`{"allocations":[{"name":"a","pid":1}]} x`, "byte 40: invalid character 'x' after top-level value"},
		{`{"allocations":[7]}`, "allocations[0]: not a JSON object"},
		{`{"allocations":{}}`, "allocations: json: cannot unmarshal object"},
	} {
		_, err := DecodeTable([]byte(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("DecodeTable(%s) = %v, want %q…", tt.in, err, tt.want)
		}
	}
}

// TestCorruptRegistryErrorNamesFileAndWhere: what a start reports about a
// corrupt registry (exit 73) names the file, the value, and the way out;
// nothing is written.
func TestCorruptRegistryErrorNamesFileAndWhere(t *testing.T) {
	dir := t.TempDir()
	f := &Registry{Path: filepath.Join(dir, "scope.lock")}
	data := []byte(`{"allocations":[{"name":"a","pid":1},{"name":"b","pid":"2"}]}` + "\n")
	if err := os.WriteFile(f.Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := f.Register(context.Background(), self(t).request("x", "/x:write"))
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Register over a corrupt registry: %v, want ErrCorrupt", err)
	}
	for _, want := range []string{f.Path, "allocations[1].pid", "withlock break --scopes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q is not one line", err)
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

// BenchmarkRegistryCodec: decode + encode of the registry alone.
func BenchmarkRegistryCodec(b *testing.B) {
	for _, n := range []int{100, 1000} {
		data := benchTable(n).Encode()
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t, err := DecodeTable(data)
				if err != nil {
					b.Fatal(err)
				}
				t.Encode()
			}
		})
	}
}

// TestCodecPathsAgree: content withlock wrote itself (read by decodeOwn)
// decodes as the general reader (decodeForeign) reads it.
func TestCodecPathsAgree(t *testing.T) {
	for _, in := range append(codecCases, string(benchTable(3).Encode()), string(benchTable(0).Encode())) {
		codecPathsAgree(t, []byte(in))
	}
}

func codecPathsAgree(t *testing.T, data []byte) {
	t.Helper()
	own, ok := decodeOwn(data)
	if !ok {
		return
	}
	foreign, err := decodeForeign(data)
	if err != nil || !reflect.DeepEqual(own, foreign) {
		t.Fatalf("decodeOwn: %#v\ndecodeForeign: %#v, %v\ninput %q", own, foreign, err, data)
	}
}
