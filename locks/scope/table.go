package scope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// wireAllocation is an allocation as the registry's JSON has it, in the
// seed's field order. DelegatedFrom is a pointer so that no parent is
// written as null, as the seed does.
type wireAllocation struct {
	Name          string   `json:"name"`
	PID           int      `json:"pid"`
	Socket        string   `json:"socket"`
	ScopeAllow    []string `json:"scope_allow"`
	DelegatedFrom *string  `json:"delegated_from"`
	ScopeDeny     []string `json:"scope_deny"`
	PIDStart      uint64   `json:"pid_start"`
	CreatedAt     float64  `json:"created_at"`
}

// DecodeTable parses registry content. A missing or null "allocations" is
// an empty registry; anything that is not the seed's shape (not JSON, wrong
// types, a missing name or pid, a malformed scope) is an error saying
// where, so a registry withlock cannot reason about is never rewritten as
// if empty. Fields it does not know are kept, at both levels, with their
// keys and values as they were.
func DecodeTable(data []byte) (*Table, error) {
	if len(data) > maxSize {
		return nil, fmt.Errorf("over %d bytes", maxSize)
	}
	if t, ok := decodeOwn(data); ok {
		return t, nil
	}
	return decodeForeign(data)
}

// decodeOwn reads content exactly as Encode writes it — what withlock
// itself leaves — in one typed pass, and proves it is that by encoding the
// result back: then there is no foreign field to keep and every key is the
// known one. Anything else is not ok, for decodeForeign.
func decodeOwn(data []byte) (*Table, bool) {
	var doc struct {
		Allocations []wireAllocation `json:"allocations"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil, false
	}
	t := &Table{}
	for _, w := range doc.Allocations {
		a := Allocation{
			Name: w.Name, PID: w.PID, PIDStart: w.PIDStart, Socket: w.Socket,
			ScopeAllow: w.ScopeAllow, ScopeDeny: w.ScopeDeny, CreatedAt: w.CreatedAt,
		}
		if w.DelegatedFrom != nil {
			a.DelegatedFrom = *w.DelegatedFrom
		}
		if checkAllocation(a) != nil {
			return nil, false
		}
		t.Allocations = append(t.Allocations, a)
	}
	return t, bytes.Equal(t.Encode(), data)
}

// decodeForeign reads a registry another program wrote (or changed): every
// object as its raw fields, the known keys taken out by their exact names
// — a struct would also match "Name" or "PID", which another program may
// mean as a field of its own — and the rest kept.
func decodeForeign(data []byte) (*Table, error) {
	fields, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if err := takeField(fields, "allocations", &raws); err != nil {
		return nil, err
	}
	t := &Table{}
	if len(fields) > 0 {
		t.extra = fields
	}
	for i, raw := range raws {
		a, err := decodeAllocation(raw)
		if err != nil {
			return nil, fmt.Errorf("allocations[%d]%w", i, err)
		}
		t.Allocations = append(t.Allocations, a)
	}
	return t, nil
}

// decodeAllocation reads one element of "allocations" field by field; its
// errors start with the field they are about (".pid: …"), or ": " for the
// whole.
func decodeAllocation(raw json.RawMessage) (Allocation, error) {
	fields, err := decodeObject(raw)
	if err != nil {
		return Allocation{}, fmt.Errorf(": %w", err)
	}
	var a Allocation
	var pid *int // nil: no pid; a null delegated_from leaves "" (not delegated)
	for _, f := range []struct {
		key string
		to  any
	}{
		{"name", &a.Name}, {"pid", &pid}, {"socket", &a.Socket}, {"scope_allow", &a.ScopeAllow},
		{"delegated_from", &a.DelegatedFrom}, {"scope_deny", &a.ScopeDeny}, {"pid_start", &a.PIDStart}, {"created_at", &a.CreatedAt},
	} {
		if err := takeField(fields, f.key, f.to); err != nil {
			return Allocation{}, fmt.Errorf(".%w", err)
		}
	}
	if pid == nil {
		return Allocation{}, errors.New(".pid: missing")
	}
	a.PID = *pid
	if err := checkAllocation(a); err != nil {
		return Allocation{}, err
	}
	if len(fields) > 0 {
		a.extra = fields
	}
	return a, nil
}

// checkAllocation is what the registry requires of an allocation beyond
// its JSON types: a name, and scopes that parse. The error starts as
// decodeAllocation's do.
func checkAllocation(a Allocation) error {
	if a.Name == "" {
		return errors.New(".name: missing or empty")
	}
	for _, text := range slices.Concat(a.ScopeAllow, a.ScopeDeny) {
		if _, err := ParseSpec(text); err != nil {
			return fmt.Errorf(": %w", err)
		}
	}
	return nil
}

// decodeObject reads a JSON object (not null) into its raw fields. A
// syntax error says at which byte.
func decodeObject(data []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	err := json.Unmarshal(data, &fields)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return nil, fmt.Errorf("byte %d: %w", syntax.Offset, err)
	case err != nil || fields == nil:
		return nil, errors.New("not a JSON object")
	}
	return fields, nil
}

// takeField decodes fields[key], when present, into to and removes it
// from fields; a JSON null leaves to as it was (nil for a pointer or a
// slice).
func takeField(fields map[string]json.RawMessage, key string, to any) error {
	raw, ok := fields[key]
	if !ok {
		return nil
	}
	delete(fields, key)
	if err := json.Unmarshal(raw, to); err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	return nil
}

// Encode renders the registry as JSON with one allocation per line (easy
// to read and to grep): the seed's fields in the seed's order, then
// scope_deny, pid_start, created_at, then kept unknown fields sorted by
// key; the document's own unknown fields follow the allocations. Names
// and paths are written as they are (no HTML escapes such as \u003c). It
// always ends in a newline and is never empty.
func (t *Table) Encode() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	b.WriteString(`{"allocations": [`)
	for i := range t.Allocations {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		a := &t.Allocations[i]
		w := wireAllocation{
			Name: a.Name, PID: a.PID, Socket: a.Socket, ScopeAllow: a.ScopeAllow,
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
		// Strings and numbers cannot fail to encode (a created_at that is
		// NaN or infinite was never read from JSON nor taken from a clock).
		if err := enc.Encode(w); err != nil {
			panic(fmt.Sprintf("scope registry: encode: %v", err))
		}
		b.Truncate(b.Len() - len("}\n")) // the encoder's "}\n": the extra fields go first
		writeExtra(&b, a.extra)
		b.WriteByte('}')
	}
	if len(t.Allocations) > 0 {
		b.WriteByte('\n')
	}
	b.WriteByte(']')
	writeExtra(&b, t.extra)
	b.WriteString("}\n")
	return b.Bytes()
}

// writeExtra writes kept foreign fields, sorted by key, each as
// `,"key":value`, the value as it was read.
func writeExtra(b *bytes.Buffer, extra map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		key, _ := json.Marshal(k) // a string always marshals
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		b.Write(extra[k])
	}
}
