package scope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Allocation is one holder's entry in the registry: the seed's fields
// (name, pid, socket, scope_allow, delegated_from) plus scope_deny,
// pid_start and created_at. Fields written by other programs are kept.
type Allocation struct {
	Name          string
	PID           int
	PIDStart      uint64 // field 22 of /proc/<pid>/stat; 0 when not recorded
	Socket        string
	ScopeAllow    []string
	ScopeDeny     []string // always the union of the direct children's ScopeAllow
	DelegatedFrom string   // "" is JSON null: not delegated
	CreatedAt     float64  // epoch seconds

	extra map[string]json.RawMessage // fields this version does not know
}

// Allow and Deny are the allocation's scopes, parsed. The registry only
// holds scopes that parse (DecodeTable checks), so nothing is lost.
func (a Allocation) Allow() []Spec { return mustParseSpecs(a.ScopeAllow) }
func (a Allocation) Deny() []Spec  { return mustParseSpecs(a.ScopeDeny) }

// Effective is the allocation's effective write scope: allow − deny.
func (a Allocation) Effective() Set { return Effective(a.Allow(), a.Deny()) }

func mustParseSpecs(texts []string) []Spec {
	out := make([]Spec, 0, len(texts))
	for _, t := range texts {
		if s, err := ParseSpec(t); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Table is the registry's content: the allocations plus whatever top-level
// fields other programs keep there.
type Table struct {
	Allocations []Allocation

	extra map[string]json.RawMessage
}

// wireAllocation is an allocation as JSON has it, in the seed's field
// order. PID is a pointer so that a missing pid is told from pid 0, and
// DelegatedFrom so that no parent is written as null, as the seed does.
type wireAllocation struct {
	Name          string   `json:"name"`
	PID           *int     `json:"pid"`
	Socket        string   `json:"socket"`
	ScopeAllow    []string `json:"scope_allow"`
	DelegatedFrom *string  `json:"delegated_from"`
	ScopeDeny     []string `json:"scope_deny"`
	PIDStart      uint64   `json:"pid_start"`
	CreatedAt     float64  `json:"created_at"`
}

// knownKeys are the allocation's keys in wireAllocation's order, then the
// document's.
var knownKeys = []string{"name", "pid", "socket", "scope_allow", "delegated_from", "scope_deny", "pid_start", "created_at", "allocations"}

// wireTable is the document without foreign fields.
type wireTable struct {
	Allocations []wireAllocation `json:"allocations"`
}

// DecodeTable parses registry content. A missing or null "allocations" is
// an empty registry; anything that is not the seed's shape (wrong types,
// missing name or pid, malformed scope) is an error, so a registry withlock
// cannot reason about is never rewritten as if empty. Fields it does not
// know are kept, at both levels, with their exact keys.
func DecodeTable(data []byte) (*Table, error) {
	return decodeTable(data, canDecodeStrict(data))
}

// decodeTable reads the document with one typed json.Unmarshal when strict
// (every key is one of ours: what withlock itself writes), else field by
// field, keeping the keys it does not know. A fuzz test holds both to the
// same results.
func decodeTable(data []byte, strict bool) (*Table, error) {
	if len(data) > maxSize {
		return nil, fmt.Errorf("over %d bytes", maxSize)
	}
	if strict {
		if t, err := decodeStrict(data); err == nil {
			return t, nil
		}
	}
	return decodeKeepingUnknown(data)
}

// canDecodeStrict reports whether no key could be taken for one of ours by
// encoding/json's case-insensitive matching ("Name" for "name"): then a
// strict decode, which refuses unknown keys, reads exactly what the
// field-by-field one would. It looks at every quote, key or not, so a
// value such as "Name" also sends the registry the field-by-field way:
// slower, never wrong.
func canDecodeStrict(data []byte) bool {
	for i := 0; ; i++ {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return true
		}
		i += q
		rest := data[i+1:]
		if len(rest) == 0 {
			return true
		}
		switch rest[0] | 0x20 { // the first letters of knownKeys, either case
		case 'n', 'p', 's', 'd', 'c', 'a':
		default:
			continue
		}
		for _, k := range knownKeys {
			if len(rest) > len(k) && rest[len(k)] == '"' && bytes.EqualFold(rest[:len(k)], []byte(k)) && string(rest[:len(k)]) != k {
				return false
			}
		}
	}
}

func decodeStrict(data []byte) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireTable
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	} else if err == nil {
		return nil, errors.New("data after the document")
	}
	if !startsObject(data) {
		return nil, errors.New("not a JSON object")
	}
	t := &Table{}
	if w.Allocations != nil {
		t.Allocations = make([]Allocation, 0, len(w.Allocations))
	}
	for i, wa := range w.Allocations {
		a, err := wa.allocation()
		if err != nil {
			return nil, fmt.Errorf("allocation %d: %w", i, err)
		}
		t.Allocations = append(t.Allocations, a)
	}
	return t, nil
}

// decodeKeepingUnknown reads every object as a map of raw values, decodes
// the keys it knows one by one and keeps the others.
func decodeKeepingUnknown(data []byte) (*Table, error) {
	top, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	t := &Table{}
	var raws []json.RawMessage
	if raw, ok := top["allocations"]; ok {
		if err := json.Unmarshal(raw, &raws); err != nil {
			return nil, fmt.Errorf("allocations: %w", err)
		}
		delete(top, "allocations")
		if raws != nil {
			t.Allocations = make([]Allocation, 0, len(raws))
		}
	}
	if len(top) > 0 {
		t.extra = top
	}
	for i, raw := range raws {
		a, err := decodeAllocation(raw)
		if err != nil {
			return nil, fmt.Errorf("allocation %d: %w", i, err)
		}
		t.Allocations = append(t.Allocations, a)
	}
	return t, nil
}

func decodeAllocation(raw json.RawMessage) (Allocation, error) {
	fields, err := decodeObject(raw)
	if err != nil {
		return Allocation{}, err
	}
	var w wireAllocation
	into := []any{&w.Name, &w.PID, &w.Socket, &w.ScopeAllow, &w.DelegatedFrom, &w.ScopeDeny, &w.PIDStart, &w.CreatedAt}
	for i, dst := range into {
		key := knownKeys[i]
		if raw, ok := fields[key]; ok {
			if err := json.Unmarshal(raw, dst); err != nil {
				return Allocation{}, fmt.Errorf("%s: %w", key, err)
			}
			delete(fields, key)
		}
	}
	a, err := w.allocation()
	if len(fields) > 0 {
		a.extra = fields
	}
	return a, err
}

// decodeObject reads a JSON object (not null) into its raw fields.
func decodeObject(data []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		return nil, errors.New("null, want an object")
	}
	return fields, nil
}

// startsObject reports whether the first non-space byte opens an object
// (a strict decode of `null` into a struct succeeds and means nothing).
func startsObject(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// allocation checks what both decoders read: a name, a pid, scopes that
// parse.
func (w wireAllocation) allocation() (Allocation, error) {
	switch {
	case w.Name == "":
		return Allocation{}, errors.New("name: missing or empty")
	case w.PID == nil:
		return Allocation{}, errors.New("pid: missing")
	}
	for _, list := range [][]string{w.ScopeAllow, w.ScopeDeny} {
		for _, text := range list {
			if _, err := splitSpec(text); err != nil {
				return Allocation{}, err
			}
		}
	}
	a := Allocation{
		Name: w.Name, PID: *w.PID, PIDStart: w.PIDStart, Socket: w.Socket,
		ScopeAllow: w.ScopeAllow, ScopeDeny: w.ScopeDeny, CreatedAt: w.CreatedAt,
	}
	if w.DelegatedFrom != nil {
		a.DelegatedFrom = *w.DelegatedFrom
	}
	return a, nil
}

func (a *Allocation) wire() wireAllocation {
	w := wireAllocation{
		Name: a.Name, PID: &a.PID, Socket: a.Socket, ScopeAllow: a.ScopeAllow,
		ScopeDeny: a.ScopeDeny, PIDStart: a.PIDStart, CreatedAt: a.CreatedAt,
	}
	if w.ScopeAllow == nil {
		w.ScopeAllow = []string{}
	}
	if w.ScopeDeny == nil {
		w.ScopeDeny = []string{}
	}
	if a.DelegatedFrom != "" {
		w.DelegatedFrom = &a.DelegatedFrom
	}
	return w
}

// Encode renders the registry as JSON with one allocation per line (easy
// to read and to grep): the seed's fields in the seed's order, then
// scope_deny, pid_start, created_at, then kept unknown fields sorted by
// key; the document's own unknown fields follow the allocations. It always
// ends in a newline and is never empty.
func (t *Table) Encode() []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"allocations": [`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // paths and names as they are, not \u003c
	for i := range t.Allocations {
		if i > 0 {
			buf.Truncate(buf.Len() - 1) // Encode's newline: the comma goes first
			buf.WriteString(",\n")
		} else {
			buf.WriteByte('\n')
		}
		a := &t.Allocations[i]
		if err := enc.Encode(a.wire()); err != nil {
			panic(fmt.Sprintf("scope registry: encode: %v", err)) // strings, numbers and nil pointers cannot fail
		}
		if len(a.extra) > 0 {
			buf.Truncate(buf.Len() - 2) // "}\n"
			appendExtra(&buf, a.extra)
			buf.WriteString("}\n")
		}
	}
	buf.WriteByte(']')
	appendExtra(&buf, t.extra)
	buf.WriteString("}\n")
	return buf.Bytes()
}

// appendExtra appends kept foreign fields, sorted by key, each as
// `,"key":value`. The values were decoded from valid JSON and go back as
// they came.
func appendExtra(buf *bytes.Buffer, extra map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		key, _ := json.Marshal(k) // a string always marshals
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(extra[k])
	}
}
