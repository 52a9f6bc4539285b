package scope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The oracle the registry's codec (codec.go) is held to: the decoder and
// encoder withlock used before it, built on encoding/json. The decoder reads
// every object as a map of raw values (keys matched exactly, the last of
// duplicates winning), decodes the keys it knows one by one with
// json.Unmarshal into their Go types and keeps the others; the encoder
// writes each allocation with json.Encoder (SetEscapeHTML(false)).

// wireAllocation is an allocation as the registry's JSON has it, in the
// seed's field order: the format, in encoding/json's terms. PID is a
// pointer so that a missing pid is told from pid 0, and DelegatedFrom so
// that no parent is written as null, as the seed does.
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

// allocation checks what the oracle read with the codec's rules.
func (w wireAllocation) allocation() (Allocation, error) {
	var a Allocation
	if w.PID != nil {
		a.PID = *w.PID
	}
	a.Name, a.PIDStart, a.Socket = w.Name, w.PIDStart, w.Socket
	a.ScopeAllow, a.ScopeDeny, a.CreatedAt = w.ScopeAllow, w.ScopeDeny, w.CreatedAt
	if w.DelegatedFrom != nil {
		a.DelegatedFrom = *w.DelegatedFrom
	}
	if err := checkAllocation(&a, w.PID != nil); err != nil {
		return Allocation{}, err
	}
	return a, nil
}

// oracleDecode is DecodeTable by encoding/json.
func oracleDecode(data []byte) (*Table, error) {
	if len(data) > maxSize {
		return nil, fmt.Errorf("over %d bytes", maxSize)
	}
	return oracleDecodeFields(data)
}

// decodeKeepingUnknown reads every object as a map of raw values, decodes
// the keys it knows one by one and keeps the others.
func oracleDecodeFields(data []byte) (*Table, error) {
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
		key := allocationKeys[i]
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

// oracleEncode is Encode by encoding/json.
func oracleEncode(t *Table) []byte {
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
			oracleAppendExtra(&buf, a.extra)
			buf.WriteString("}\n")
		}
	}
	buf.WriteByte(']')
	oracleAppendExtra(&buf, t.extra)
	buf.WriteString("}\n")
	return buf.Bytes()
}

func oracleAppendExtra(buf *bytes.Buffer, extra map[string]json.RawMessage) {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		key, _ := json.Marshal(k) // a string always marshals
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(extra[k])
	}
}
