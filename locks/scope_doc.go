package locks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// ScopeAllocation is one holder's entry in the registry: the seed's fields
// (name, pid, socket, scope_allow, delegated_from) plus scope_deny,
// pid_start and created_at. Fields written by other programs are kept.
type ScopeAllocation struct {
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
// holds scopes that parse (DecodeScopeRegistry checks), so nothing is lost.
func (a ScopeAllocation) Allow() []Scope { return mustParseScopes(a.ScopeAllow) }
func (a ScopeAllocation) Deny() []Scope  { return mustParseScopes(a.ScopeDeny) }

// Effective is the allocation's effective write scope: allow − deny.
func (a ScopeAllocation) Effective() ScopeSet { return EffectiveScope(a.Allow(), a.Deny()) }

func mustParseScopes(texts []string) []Scope {
	out := make([]Scope, 0, len(texts))
	for _, t := range texts {
		if s, err := ParseScope(t); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// ScopeRegistry is the registry document: the allocations plus whatever
// top-level fields other programs keep there.
type ScopeRegistry struct {
	Allocations []ScopeAllocation

	extra map[string]json.RawMessage
}

// DecodeScopeRegistry parses registry content. A missing or null
// "allocations" is an empty registry; anything that is not the seed's shape
// (wrong types, missing name or pid, malformed scope) is an error, so a
// registry withlock cannot reason about is never rewritten as if empty.
func DecodeScopeRegistry(data []byte) (*ScopeRegistry, error) {
	if len(data) > maxScopeRegistry {
		return nil, fmt.Errorf("over %d bytes", maxScopeRegistry)
	}
	top, err := decodeObject(data)
	if err != nil {
		return nil, err
	}
	reg := &ScopeRegistry{}
	if raw, ok := top["allocations"]; ok {
		delete(top, "allocations")
		if reg.Allocations, err = decodeAllocations(raw); err != nil {
			return nil, err
		}
	}
	if len(top) > 0 {
		reg.extra = top
	}
	return reg, nil
}

func decodeObject(data []byte) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	return obj, nil
}

func decodeAllocations(raw json.RawMessage) ([]ScopeAllocation, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("allocations: %w", err)
	}
	out := make([]ScopeAllocation, 0, len(items))
	for i, item := range items {
		a, err := decodeAllocation(item)
		if err != nil {
			return nil, fmt.Errorf("allocation %d: %w", i, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func decodeAllocation(raw json.RawMessage) (ScopeAllocation, error) {
	obj, err := decodeObject(raw)
	if err != nil {
		return ScopeAllocation{}, err
	}
	var a ScopeAllocation
	_, hasPID := obj["pid"]
	field := func(key string, decode func(json.RawMessage) error) {
		if v, ok := obj[key]; ok && err == nil {
			delete(obj, key)
			if ferr := decode(v); ferr != nil {
				err = fmt.Errorf("%s: %w", key, ferr)
			}
		}
	}
	field("name", func(v json.RawMessage) error { return decodeString(v, &a.Name) })
	field("pid", func(v json.RawMessage) error { return decodeInt(v, &a.PID) })
	field("pid_start", func(v json.RawMessage) error { return decodeUint(v, &a.PIDStart) })
	field("socket", func(v json.RawMessage) error { return decodeString(v, &a.Socket) })
	field("scope_allow", func(v json.RawMessage) error { return decodeScopeList(v, &a.ScopeAllow) })
	field("scope_deny", func(v json.RawMessage) error { return decodeScopeList(v, &a.ScopeDeny) })
	field("delegated_from", func(v json.RawMessage) error { return decodeString(v, &a.DelegatedFrom) })
	field("created_at", func(v json.RawMessage) error { return decodeFloat(v, &a.CreatedAt) })
	switch {
	case err != nil:
		return ScopeAllocation{}, err
	case a.Name == "":
		return ScopeAllocation{}, errors.New("name: missing or empty")
	case !hasPID:
		return ScopeAllocation{}, errors.New("pid: missing")
	}
	if len(obj) > 0 {
		a.extra = obj
	}
	return a, nil
}

func isNull(v json.RawMessage) bool { return string(v) == "null" }

// decodeString takes a string or null. Plain strings (no escapes, valid
// UTF-8) skip the reflection of json.Unmarshal: the registry is read on
// every registration.
func decodeString(v json.RawMessage, dst *string) error {
	if isNull(v) {
		*dst = ""
		return nil
	}
	if n := len(v); n >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		*dst = string(v[1 : n-1])
		return nil
	}
	return json.Unmarshal(v, dst)
}

func decodeInt(v json.RawMessage, dst *int) error {
	n, err := strconv.Atoi(string(v))
	if err != nil {
		return fmt.Errorf("%s is not an integer", v)
	}
	*dst = n
	return nil
}

func decodeUint(v json.RawMessage, dst *uint64) error {
	if isNull(v) {
		*dst = 0
		return nil
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a non-negative integer", v)
	}
	*dst = n
	return nil
}

func decodeFloat(v json.RawMessage, dst *float64) error {
	if isNull(v) {
		*dst = 0
		return nil
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", v)
	}
	*dst = f
	return nil
}

func decodeScopeList(v json.RawMessage, dst *[]string) error {
	list := []string{}
	if string(v) != "[]" {
		if err := json.Unmarshal(v, &list); err != nil {
			return err
		}
	}
	for _, s := range list {
		if _, err := ParseScope(s); err != nil {
			return err
		}
	}
	*dst = list
	return nil
}

// Encode renders the registry as indented JSON: the seed's field order,
// then scope_deny, pid_start, created_at, then kept unknown fields sorted
// by name. It always ends in a newline and is never empty.
func (r *ScopeRegistry) Encode() []byte {
	var b bytes.Buffer
	b.Grow(64 + 320*len(r.Allocations))
	b.WriteString("{\n  \"allocations\": [")
	for i := range r.Allocations {
		if i > 0 {
			b.WriteByte(',')
		}
		encodeAllocation(&b, &r.Allocations[i])
	}
	if len(r.Allocations) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteByte(']')
	encodeExtra(&b, r.extra, "  ")
	b.WriteString("\n}\n")
	return b.Bytes()
}

func encodeAllocation(b *bytes.Buffer, a *ScopeAllocation) {
	const in = "\n      "
	b.WriteString("\n    {" + in + `"name": `)
	appendJSONString(b, a.Name)
	b.WriteString("," + in + `"pid": ` + strconv.Itoa(a.PID))
	b.WriteString("," + in + `"socket": `)
	appendJSONString(b, a.Socket)
	b.WriteString("," + in + `"scope_allow": `)
	appendJSONStrings(b, a.ScopeAllow)
	b.WriteString("," + in + `"delegated_from": `)
	if a.DelegatedFrom == "" {
		b.WriteString("null")
	} else {
		appendJSONString(b, a.DelegatedFrom)
	}
	b.WriteString("," + in + `"scope_deny": `)
	appendJSONStrings(b, a.ScopeDeny)
	b.WriteString("," + in + `"pid_start": ` + strconv.FormatUint(a.PIDStart, 10))
	b.WriteString("," + in + `"created_at": ` + strconv.FormatFloat(a.CreatedAt, 'f', -1, 64))
	encodeExtra(b, a.extra, "      ")
	b.WriteString("\n    }")
}

// encodeExtra appends kept unknown fields, sorted, indented to fit.
func encodeExtra(b *bytes.Buffer, extra map[string]json.RawMessage, indent string) {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(",\n" + indent)
		appendJSONString(b, k)
		b.WriteString(": ")
		if err := json.Indent(b, extra[k], indent, "  "); err != nil {
			b.WriteString("null") // cannot happen: the value was decoded from valid JSON
		}
	}
}

func appendJSONStrings(b *bytes.Buffer, list []string) {
	b.WriteByte('[')
	for i, s := range list {
		if i > 0 {
			b.WriteString(", ")
		}
		appendJSONString(b, s)
	}
	b.WriteByte(']')
}

// appendJSONString quotes s as JSON. Invalid UTF-8 goes through
// encoding/json, which replaces it, as the registry is UTF-8 text.
func appendJSONString(b *bytes.Buffer, s string) {
	if !utf8.ValidString(s) {
		data, _ := json.Marshal(s)
		b.Write(data)
		return
	}
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
