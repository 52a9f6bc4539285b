// Package jsontest is the tests' view of a JSON object: its members in the
// order written, each value as encoding/json decodes it.
package jsontest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// Members decodes the JSON object data into "key=value" strings in the
// order written, numbers as written (json.Number).
func Members(t testing.TB, data []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: not a JSON object (%v)", data, err)
	}
	var out []string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		out = append(out, fmt.Sprintf("%s=%#v", key, v))
	}
	return out
}

// EachZeroed returns full and, for each of its fields, a copy with that
// field zeroed; it fails the test when full leaves a field zero (full must
// set every one, or an added field would go untested).
func EachZeroed[T any](t testing.TB, full T) []T {
	t.Helper()
	rv := reflect.ValueOf(full)
	cases := []T{full}
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("field %s is zero in %T: give it a value", rv.Type().Field(i).Name, full)
		}
		c := full
		reflect.ValueOf(&c).Elem().Field(i).SetZero()
		cases = append(cases, c)
	}
	return cases
}
