package locks

import (
	"encoding/json"
	"testing"
)

// FuzzScopeJSONScanner holds the JSON scanner the lock payload's decoder uses to encoding/json:
// the same inputs are valid, and strings decode to the same values. Seed
// corpus: testdata/fuzz/FuzzScopeJSONScanner.
func FuzzScopeJSONScanner(f *testing.F) {
	for _, s := range []string{`{"allocations": [{"name": "a", "pid": 1, "delegated_from": null}]}`, `"a\u00e9\ud800x"`, `[1, -0.5e+3, true, null, {"a": []}]`, `01`, `"\x01"`, ` {"a" : "b" } `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &jsonScanner{data: string(data)}
		err := s.document(func() error { _, err := s.skip(); return err })
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid(%q) = %v, scanner error %v", data, valid, err)
		}
		if err != nil {
			return
		}
		var want any
		if json.Unmarshal(data, &want) != nil {
			return // valid, but a number overflows float64 (1E700): nothing to compare
		}
		if str, ok := want.(string); ok {
			s := &jsonScanner{data: string(data)}
			got, err := s.str()
			if err != nil || got != str {
				t.Fatalf("string %q: scanner %q %v, encoding/json %q", data, got, err, str)
			}
		}
	})
}
