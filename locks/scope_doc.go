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
// Fields it does not know are kept, at both levels.
func DecodeScopeRegistry(data []byte) (*ScopeRegistry, error) {
	return decodeScopeRegistry(data, true)
}

// decodeScopeRegistry is DecodeScopeRegistry; with asEncoded false every
// allocation is read token by token, never by decodeAllocationAsEncoded
// (a fuzz test holds the two ways to the same results).
func decodeScopeRegistry(data []byte, asEncoded bool) (*ScopeRegistry, error) {
	if len(data) > maxScopeRegistry {
		return nil, fmt.Errorf("over %d bytes", maxScopeRegistry)
	}
	s := &jsonScanner{data: string(data)}
	reg := &ScopeRegistry{}
	err := s.document(func() error {
		return s.object(func(key string) error {
			if key == "allocations" {
				return decodeAllocations(s, &reg.Allocations, asEncoded)
			}
			return keepField(s, &reg.extra, key)
		})
	})
	if err != nil {
		return nil, err
	}
	return reg, nil
}

// keepField stores the raw value of a field this version does not know.
func keepField(s *jsonScanner, extra *map[string]json.RawMessage, key string) error {
	raw, err := s.skip()
	if err != nil {
		return err
	}
	if *extra == nil {
		*extra = make(map[string]json.RawMessage)
	}
	(*extra)[key] = json.RawMessage(raw)
	return nil
}

func decodeAllocations(s *jsonScanner, out *[]ScopeAllocation, asEncoded bool) error {
	*out = nil
	if s.null() {
		return nil
	}
	return s.array(func() error {
		from := s.pos
		a, ok := ScopeAllocation{}, false
		if asEncoded {
			a, ok = decodeAllocationAsEncoded(s)
		}
		if !ok {
			s.pos = from
			var err error
			if a, err = decodeAllocation(s); err != nil {
				return fmt.Errorf("allocation %d: %w", len(*out), err)
			}
		}
		if *out == nil {
			*out = make([]ScopeAllocation, 0, allocationsAhead(s.pos-from, len(s.data)-s.pos))
		}
		*out = append(*out, a)
		return nil
	})
}

// allocationsAhead guesses from the size of the first allocation how many
// the rest of the document holds, so the slice is made once rather than
// grown through ten copies. The guess is bounded by the document's size
// (no allocation is counted at under 128 bytes), and a low one only means
// append grows the slice as usual.
func allocationsAhead(first, rest int) int {
	return 1 + rest/max(first-first/8, 128)
}

func decodeAllocation(s *jsonScanner) (ScopeAllocation, error) {
	var a ScopeAllocation
	hasPID := false
	err := s.object(func(key string) error {
		var err error
		switch key {
		case "name":
			err = decodeString(s, &a.Name)
		case "pid":
			hasPID = true
			err = decodeInt(s, &a.PID)
		case "pid_start":
			err = decodeUint(s, &a.PIDStart)
		case "socket":
			err = decodeString(s, &a.Socket)
		case "scope_allow":
			err = decodeScopeList(s, &a.ScopeAllow)
		case "scope_deny":
			err = decodeScopeList(s, &a.ScopeDeny)
		case "delegated_from":
			err = decodeString(s, &a.DelegatedFrom)
		case "created_at":
			err = decodeFloat(s, &a.CreatedAt)
		default:
			return keepField(s, &a.extra, key)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	switch {
	case err != nil:
		return ScopeAllocation{}, err
	case a.Name == "":
		return ScopeAllocation{}, errors.New("name: missing or empty")
	case !hasPID:
		return ScopeAllocation{}, errors.New("pid: missing")
	}
	return a, nil
}

// decodeString takes a string or null ("").
func decodeString(s *jsonScanner, dst *string) error {
	if s.null() {
		*dst = ""
		return nil
	}
	v, err := s.str()
	*dst = v
	return err
}

func decodeInt(s *jsonScanner, dst *int) error {
	text, err := s.number()
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return fmt.Errorf("%s is not an integer", text)
	}
	*dst = n
	return nil
}

func decodeUint(s *jsonScanner, dst *uint64) error {
	if s.null() {
		*dst = 0
		return nil
	}
	text, err := s.number()
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return fmt.Errorf("%s is not a non-negative integer", text)
	}
	*dst = n
	return nil
}

func decodeFloat(s *jsonScanner, dst *float64) error {
	if s.null() {
		*dst = 0
		return nil
	}
	text, err := s.number()
	if err != nil {
		return err
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return fmt.Errorf("%s is not a number", text)
	}
	*dst = f
	return nil
}

// decodeScopeList takes an array of scope strings, or null.
func decodeScopeList(s *jsonScanner, dst *[]string) error {
	if s.null() {
		*dst = nil
		return nil
	}
	list := []string{}
	err := s.array(func() error {
		text, err := s.str()
		if err != nil {
			return err
		}
		if _, err := splitScope(text); err != nil {
			return err
		}
		list = append(list, text)
		return nil
	})
	*dst = list
	return err
}

// Encode renders the registry as indented JSON: the seed's field order,
// then scope_deny, pid_start, created_at, then kept unknown fields sorted
// by name. It always ends in a newline and is never empty.
func (r *ScopeRegistry) Encode() []byte {
	return r.encode(64 + 360*len(r.Allocations)) // an allocation with a scope or two and no foreign fields
}

// encode is Encode into a buffer made for about size bytes: a rewrite
// knows the size of what it read, and one allocation of the right size
// spares copying a few hundred kilobytes as the buffer grows. The pieces
// are appended to a plain slice: a registry is some twenty thousand of
// them.
func (r *ScopeRegistry) encode(size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, "{\n  \"allocations\": ["...)
	for i := range r.Allocations {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendAllocation(b, &r.Allocations[i])
	}
	if len(r.Allocations) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, ']')
	b = appendExtra(b, r.extra, "  ")
	return append(b, "\n}\n"...)
}

func appendAllocation(b []byte, a *ScopeAllocation) []byte {
	const in = "\n      "
	b = append(b, "\n    {"+in+`"name": `...)
	b = appendJSONString(b, a.Name)
	b = append(b, ","+in+`"pid": `...)
	b = strconv.AppendInt(b, int64(a.PID), 10)
	b = append(b, ","+in+`"socket": `...)
	b = appendJSONString(b, a.Socket)
	b = append(b, ","+in+`"scope_allow": `...)
	b = appendJSONStrings(b, a.ScopeAllow)
	b = append(b, ","+in+`"delegated_from": `...)
	if a.DelegatedFrom == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, a.DelegatedFrom)
	}
	b = append(b, ","+in+`"scope_deny": `...)
	b = appendJSONStrings(b, a.ScopeDeny)
	b = append(b, ","+in+`"pid_start": `...)
	b = strconv.AppendUint(b, a.PIDStart, 10)
	b = append(b, ","+in+`"created_at": `...)
	b = strconv.AppendFloat(b, a.CreatedAt, 'f', -1, 64)
	b = appendExtra(b, a.extra, "      ")
	return append(b, "\n    }"...)
}

// appendExtra appends kept unknown fields, sorted, indented to fit.
func appendExtra(b []byte, extra map[string]json.RawMessage, indent string) []byte {
	if len(extra) == 0 {
		return b
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(b, ",\n"+indent...)
		b = appendJSONString(b, k)
		b = append(b, ": "...)
		var value bytes.Buffer
		if err := json.Indent(&value, extra[k], indent, "  "); err != nil {
			value.WriteString("null") // cannot happen: the value was decoded from valid JSON
		}
		b = append(b, value.Bytes()...)
	}
	return b
}

func appendJSONStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONString quotes s as JSON. Invalid UTF-8 goes through
// encoding/json, which replaces it, as the registry is UTF-8 text. Runs of
// bytes that need no escape (all of most names and paths) go in one copy.
func appendJSONString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		data, _ := json.Marshal(s)
		return append(b, data...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for {
		i := 0
		for i < len(s) && !jsonEscaped[s[i]] {
			i++
		}
		b = append(b, s[:i]...)
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		s = s[i+1:]
	}
	return append(b, '"')
}

// jsonEscaped marks the bytes appendJSONString escapes: the quote, the
// backslash and control characters.
var jsonEscaped = func() (escaped [256]bool) {
	for c := range 0x20 {
		escaped[c] = true
	}
	escaped['"'], escaped['\\'] = true, true
	return escaped
}()
