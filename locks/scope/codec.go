package scope

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The registry's own codec (issue 18): a start reads and writes the whole
// registry twice, and with encoding/json a registry of 1,000 allocations
// cost more than a run. It reads exactly what encoding/json reads into the
// registry's types — the JSON grammar (RFC 8259) with encoding/json's
// limits and quirks: a nesting depth of at most 10,000, invalid UTF-8 and
// lone surrogates read as U+FFFD, the last of duplicate keys wins, keys
// matched exactly (a field encoding/json would match case-insensitively,
// "Name", is kept as a foreign field, as before) — and writes what
// json.Encoder with SetEscapeHTML(false) writes. FuzzRegistryCodec holds it
// to encoding/json (oracle_test.go) on both sides.
//
// Decoding is one pass over the content converted to a string once: every
// name, socket and scope is a substring of it, so a registry of N
// allocations costs a few allocations per entry, not one per field.

// maxDepth is encoding/json's nesting limit: deeper content is an error.
const maxDepth = 10000

// A DecodeError says where registry content stops being the registry's
// format: the byte offset from the start of the content and the path of
// the value in the document (allocations[3].pid), so an operator can find
// it in a corrupt registry.
type DecodeError struct {
	Offset int    // bytes from the start of the content
	Path   string // "allocations[3].pid"; "" for the document itself
	Msg    string
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("byte %d: %s: %s", e.Offset, e.Path, e.Msg)
}

// DecodeTable parses registry content. A missing or null "allocations" is
// an empty registry; anything that is not the seed's shape (wrong types,
// missing name or pid, malformed scope) is an error (*DecodeError), so a
// registry withlock cannot reason about is never rewritten as if empty.
// Fields it does not know are kept, at both levels, with their exact keys
// and values.
func DecodeTable(data []byte) (*Table, error) {
	return decode(string(data), nil)
}

// decodeOwned is DecodeTable for content that nothing changes afterwards
// (the registry or its backup as just read into a buffer of its own): the
// table's strings share the buffer's bytes instead of a copy of them. A
// value kept past the read (Keep's allocation) is cloned (detached).
// The allocations go into into's room when it is large enough.
func decodeOwned(data []byte, into []Allocation) (*Table, error) {
	return decode(unsafe.String(unsafe.SliceData(data), len(data)), into)
}

func decode(s string, into []Allocation) (*Table, error) {
	if len(s) > maxSize {
		return nil, &DecodeError{Offset: maxSize, Msg: fmt.Sprintf("over %d bytes", maxSize)}
	}
	d := &decoder{s: s, into: into}
	t, err := d.document()
	if err != nil {
		return nil, err
	}
	return t, nil
}

type decoder struct {
	s     string
	i     int // the next byte to read
	depth int
	into  []Allocation // room for the allocations, when large enough
}

// span is one value of the document: s[start:end].
type span struct{ start, end int }

func (d *decoder) syntaxError(msg string) *DecodeError {
	if d.i >= len(d.s) {
		return &DecodeError{Offset: len(d.s), Msg: "unexpected end of content: " + msg}
	}
	return &DecodeError{Offset: d.i, Msg: fmt.Sprintf("invalid character %q: %s", d.s[d.i], msg)}
}

func (d *decoder) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// document reads the whole content: one object, then nothing but space.
// Errors of grammar end the read at once; a value of the wrong type is
// remembered and reported at the end, because a later duplicate key may
// replace it (the last wins, as in encoding/json).
func (d *decoder) document() (*Table, error) {
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		if d.i < len(d.s) {
			if _, err := d.value(); err != nil {
				return nil, err
			}
			d.space()
			if d.i < len(d.s) {
				return nil, d.syntaxError("after the document")
			}
		}
		return nil, &DecodeError{Offset: 0, Msg: "not a JSON object"}
	}
	t := &Table{}
	var allocErr error
	err := d.object(func(key string) error {
		if key != "allocations" {
			v, err := d.value()
			if err != nil {
				return err
			}
			if t.extra == nil {
				t.extra = make(map[string]json.RawMessage)
			}
			t.extra[key] = json.RawMessage(d.s[v.start:v.end])
			return nil
		}
		allocs, typeErr, err := d.allocations()
		if err != nil {
			return err
		}
		t.Allocations, allocErr = allocs, typeErr
		return nil
	})
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i < len(d.s) {
		return nil, d.syntaxError("after the document")
	}
	if allocErr != nil {
		return nil, allocErr
	}
	return t, nil
}

// object reads an object at d.i ('{' there), calling field for each key
// with d.i at its value; field reads the value.
func (d *decoder) object(field func(key string) error) error {
	if err := d.push(); err != nil {
		return err
	}
	d.i++ // '{'
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		d.depth--
		return nil
	}
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return d.syntaxError("looking for the beginning of an object key string")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return d.syntaxError("after an object key")
		}
		d.i++
		d.space()
		if err := field(key); err != nil {
			return err
		}
		d.space()
		if d.i >= len(d.s) {
			return d.syntaxError("after an object key:value pair")
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return nil
		default:
			return d.syntaxError("after an object key:value pair")
		}
	}
}

// array reads an array at d.i ('[' there), calling elem with d.i at each
// element; elem reads it.
func (d *decoder) array(elem func(k int) error) error {
	if err := d.push(); err != nil {
		return err
	}
	d.i++ // '['
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		d.depth--
		return nil
	}
	for k := 0; ; k++ {
		d.space()
		if err := elem(k); err != nil {
			return err
		}
		d.space()
		if d.i >= len(d.s) {
			return d.syntaxError("after an array element")
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			d.depth--
			return nil
		default:
			return d.syntaxError("after an array element")
		}
	}
}

func (d *decoder) push() error {
	d.depth++
	if d.depth > maxDepth {
		return &DecodeError{Offset: d.i, Msg: fmt.Sprintf("nested deeper than %d", maxDepth)}
	}
	return nil
}

// value checks the grammar of any value at d.i and returns where it is.
func (d *decoder) value() (span, error) {
	start := d.i
	if d.i >= len(d.s) {
		return span{}, d.syntaxError("looking for the beginning of a value")
	}
	var err error
	switch c := d.s[d.i]; {
	case c == '{':
		err = d.object(func(string) error { _, err := d.value(); return err })
	case c == '[':
		err = d.array(func(int) error { _, err := d.value(); return err })
	case c == '"':
		err = d.skipStr()
	case c == '-' || '0' <= c && c <= '9':
		err = d.number()
	case c == 't':
		err = d.literal("true")
	case c == 'f':
		err = d.literal("false")
	case c == 'n':
		err = d.literal("null")
	default:
		err = d.syntaxError("looking for the beginning of a value")
	}
	return span{start, d.i}, err
}

func (d *decoder) literal(word string) error {
	for k := 0; k < len(word); k++ {
		if d.i >= len(d.s) || d.s[d.i] != word[k] {
			return d.syntaxError("in literal " + word)
		}
		d.i++
	}
	return nil
}

// number checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at d.i.
func (d *decoder) number() error {
	digits := func() bool {
		start := d.i
		for d.i < len(d.s) && '0' <= d.s[d.i] && d.s[d.i] <= '9' {
			d.i++
		}
		return d.i > start
	}
	if d.s[d.i] == '-' {
		d.i++
	}
	switch {
	case d.i < len(d.s) && d.s[d.i] == '0':
		d.i++
	case d.i < len(d.s) && '1' <= d.s[d.i] && d.s[d.i] <= '9':
		digits()
	default:
		return d.syntaxError("in numeric literal")
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		if !digits() {
			return d.syntaxError("after decimal point in numeric literal")
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if !digits() {
			return d.syntaxError("in exponent of numeric literal")
		}
	}
	return nil
}

// skipStr checks a string at d.i ('"' there) and moves past it.
func (d *decoder) skipStr() error {
	_, _, err := d.scanStr()
	return err
}

// str reads a string at d.i ('"' there) and returns its value, as
// encoding/json unquotes it.
func (d *decoder) str() (string, error) {
	start := d.i
	plain, end, err := d.scanStr()
	if err != nil {
		return "", err
	}
	if plain {
		return d.s[start+1 : end-1], nil
	}
	return unquote(d.s[start+1 : end-1]), nil
}

// scanStr checks the grammar of the string at d.i and moves past it;
// plain reports that its bytes are its value (no escape, valid UTF-8).
func (d *decoder) scanStr() (plain bool, end int, err error) {
	d.i++ // '"'
	plain = true
	ascii := true
	start := d.i
	for d.i < len(d.s) {
		for d.i < len(d.s) && plainASCII[d.s[d.i]] {
			d.i++ // the common bytes, by table
		}
		if d.i >= len(d.s) {
			break
		}
		c := d.s[d.i]
		switch {
		case c == '"':
			if !ascii && plain && !utf8.ValidString(d.s[start:d.i]) {
				plain = false
			}
			d.i++
			return plain, d.i, nil
		case c == '\\':
			plain = false
			d.i++
			if d.i >= len(d.s) {
				return false, 0, d.syntaxError("in string escape code")
			}
			switch d.s[d.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i++
			case 'u':
				d.i++
				for k := 0; k < 4; k++ {
					if d.i >= len(d.s) || unhex(d.s[d.i]) < 0 {
						return false, 0, d.syntaxError(`in \u hexadecimal character escape`)
					}
					d.i++
				}
			default:
				return false, 0, d.syntaxError("in string escape code")
			}
		case c < 0x20:
			return false, 0, d.syntaxError("in string literal")
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			d.i++
		}
	}
	return false, 0, d.syntaxError("in string literal")
}

// plainASCII marks the bytes a string holds as they are: printable
// ASCII but the quote and the backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s string) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for k := 2; k < 6; k++ {
		h := unhex(s[k])
		if h < 0 {
			return -1
		}
		r = r*16 + h
	}
	return r
}

// unquote is the value of a string's content that scanStr checked:
// escapes resolved, invalid UTF-8 and lone surrogates as U+FFFD, exactly
// as encoding/json's unquoteBytes.
func unquote(s string) string {
	b := make([]byte, 0, len(s)+2*utf8.UTFMax)
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			switch s[r+1] {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != utf8.RuneError {
						r += 6
						b = utf8.AppendRune(b, dec)
						continue
					}
					rr = utf8.RuneError
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // " \ /
				b = append(b, s[r+1])
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRuneInString(s[r:])
			r += size
			b = utf8.AppendRune(b, rr)
		}
	}
	return string(b)
}

// allocations reads the value of "allocations": null or an array of
// allocation objects. typeErr is the first value of the wrong type (the
// grammar was fine); err is a grammar error.
func (d *decoder) allocations() (allocs []Allocation, typeErr, err error) {
	switch {
	case d.i < len(d.s) && d.s[d.i] == 'n':
		return nil, nil, d.literal("null")
	case d.i >= len(d.s) || d.s[d.i] != '[':
		at := d.i
		if _, err := d.value(); err != nil {
			return nil, nil, err
		}
		return nil, &DecodeError{Offset: at, Path: "allocations", Msg: "want an array or null"}, nil
	}
	if hint := d.countHint(); cap(d.into) >= hint {
		allocs, d.into = d.into[:0], nil
	} else {
		allocs = make([]Allocation, 0, hint+hint/8+4) // room for the next read's: the registry grows
	}
	err = d.array(func(k int) error {
		a, aerr, err := d.allocation(k)
		if err != nil {
			return err
		}
		if aerr != nil && typeErr == nil {
			typeErr = aerr
		}
		allocs = append(allocs, a)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if typeErr != nil {
		return nil, typeErr, nil
	}
	return allocs, nil, nil
}

// countHint guesses how many allocations follow d.i: withlock writes one
// per line, of well over 100 bytes; another writer's pretty-printed
// registry has more lines per allocation, not more bytes.
func (d *decoder) countHint() int {
	lines := strings.Count(d.s[d.i:], "\n")
	return min(lines, (len(d.s)-d.i)/100) + 1
}

// The allocation's known keys, in the seed's order (and Encode's).
const (
	keyName = iota
	keyPID
	keySocket
	keyScopeAllow
	keyDelegatedFrom
	keyScopeDeny
	keyPIDStart
	keyCreatedAt
	numKeys
)

var allocationKeys = [numKeys]string{"name", "pid", "socket", "scope_allow", "delegated_from", "scope_deny", "pid_start", "created_at"}

func knownKey(key string) int {
	switch key {
	case "name":
		return keyName
	case "pid":
		return keyPID
	case "socket":
		return keySocket
	case "scope_allow":
		return keyScopeAllow
	case "delegated_from":
		return keyDelegatedFrom
	case "scope_deny":
		return keyScopeDeny
	case "pid_start":
		return keyPIDStart
	case "created_at":
		return keyCreatedAt
	}
	return -1
}

// allocation reads element k of "allocations": an object whose known keys
// (the last of each) are read with their types once it is whole.
func (d *decoder) allocation(k int) (Allocation, error, error) {
	path := func(key string) string {
		p := "allocations[" + strconv.Itoa(k) + "]"
		if key != "" {
			p += "." + key
		}
		return p
	}
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		at := d.i
		if _, err := d.value(); err != nil {
			return Allocation{}, nil, err
		}
		return Allocation{}, &DecodeError{Offset: at, Path: path(""), Msg: "want an object"}, nil
	}
	if a, ok := d.canonical(); ok {
		return a, nil, nil
	}
	at := d.i
	var fields [numKeys]span
	var seen [numKeys]bool
	var extra map[string]json.RawMessage
	err := d.object(func(key string) error {
		v, err := d.value()
		if err != nil {
			return err
		}
		if k := knownKey(key); k >= 0 {
			fields[k], seen[k] = v, true
			return nil
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[key] = json.RawMessage(d.s[v.start:v.end])
		return nil
	})
	if err != nil {
		return Allocation{}, nil, err
	}
	var a Allocation
	hasPID := false
	for key := range numKeys {
		if !seen[key] {
			continue
		}
		v := fields[key]
		if err := d.field(&a, &hasPID, key, v); err != nil {
			return Allocation{}, &DecodeError{Offset: v.start, Path: path(allocationKeys[key]), Msg: err.Error()}, nil
		}
	}
	if err := checkAllocation(&a, hasPID); err != nil {
		return Allocation{}, &DecodeError{Offset: at, Path: path(""), Msg: err.Error()}, nil
	}
	a.extra = extra
	return a, nil, nil
}

// canonical reads, at d.i, an allocation in exactly the form Encode
// writes, with no foreign field and no string that needs an escape or is
// not ASCII — what withlock itself left: the fast path of allocation, with
// no key lookup and no value read twice. Anything else (and anything the
// registry refuses) leaves d.i where it was, ok false, for the general
// path, which reads it or says what is wrong with it.
func (d *decoder) canonical() (a Allocation, ok bool) {
	start := d.i
	number := func() (string, bool) {
		at := d.i
		if d.i >= len(d.s) || (d.s[d.i] != '-' && (d.s[d.i] < '0' || d.s[d.i] > '9')) || d.number() != nil {
			return "", false
		}
		return d.s[at:d.i], true
	}
	ok = d.lit(`{"name":`)
	if ok {
		a.Name, ok = d.plainStr()
	}
	if ok = ok && d.lit(`,"pid":`); ok {
		var text string
		if text, ok = number(); ok {
			n, err := strconv.ParseInt(text, 10, 64)
			a.PID, ok = int(n), err == nil && int64(int(n)) == n
		}
	}
	if ok = ok && d.lit(`,"socket":`); ok {
		a.Socket, ok = d.plainStr()
	}
	if ok = ok && d.lit(`,"scope_allow":`); ok {
		a.ScopeAllow, ok = d.plainList()
	}
	if ok = ok && d.lit(`,"delegated_from":`); ok && !d.lit("null") {
		a.DelegatedFrom, ok = d.plainStr()
	}
	if ok = ok && d.lit(`,"scope_deny":`); ok {
		a.ScopeDeny, ok = d.plainList()
	}
	if ok = ok && d.lit(`,"pid_start":`); ok {
		var text string
		if text, ok = number(); ok {
			var err error
			a.PIDStart, err = strconv.ParseUint(text, 10, 64)
			ok = err == nil
		}
	}
	if ok = ok && d.lit(`,"created_at":`); ok {
		var text string
		if text, ok = number(); ok {
			var err error
			a.CreatedAt, err = strconv.ParseFloat(text, 64)
			ok = err == nil
		}
	}
	if !ok || !d.lit("}") || checkAllocation(&a, true) != nil {
		d.i = start
		return Allocation{}, false
	}
	return a, true
}

// lit moves past text when it is at d.i.
func (d *decoder) lit(text string) bool {
	if strings.HasPrefix(d.s[d.i:], text) {
		d.i += len(text)
		return true
	}
	return false
}

// plainStr reads a string of printable ASCII without escapes at d.i: its
// bytes are its value.
func (d *decoder) plainStr() (string, bool) {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return "", false
	}
	k := d.i + 1
	for k < len(d.s) && plainASCII[d.s[k]] {
		k++
	}
	if k >= len(d.s) || d.s[k] != '"' {
		return "", false
	}
	s := d.s[d.i+1 : k]
	d.i = k + 1
	return s, true
}

// plainList reads an array of plainStr strings, no space, at d.i.
func (d *decoder) plainList() ([]string, bool) {
	if !d.lit("[") {
		return nil, false
	}
	list := []string{}
	if d.lit("]") {
		return list, true
	}
	for {
		s, ok := d.plainStr()
		if !ok {
			return nil, false
		}
		list = append(list, s)
		if d.lit("]") {
			return list, true
		}
		if !d.lit(",") {
			return nil, false
		}
	}
}

// field reads the known field key of an allocation from v, whose grammar
// was checked, with encoding/json's rules for the field's Go type: null
// leaves the zero value (no pid: *hasPID false).
func (d *decoder) field(a *Allocation, hasPID *bool, key int, v span) error {
	text := d.s[v.start:v.end]
	if text == "null" {
		switch key {
		case keyName:
			// the zero value stays
		case keyPID:
			a.PID, *hasPID = 0, false
		case keyDelegatedFrom:
			a.DelegatedFrom = ""
		case keyScopeAllow:
			a.ScopeAllow = nil
		case keyScopeDeny:
			a.ScopeDeny = nil
		}
		return nil
	}
	switch key {
	case keyName, keySocket, keyDelegatedFrom:
		if text[0] != '"' {
			return fmt.Errorf("want a string, got %s", clip(text))
		}
		s := stringValue(text)
		switch key {
		case keyName:
			a.Name = s
		case keySocket:
			a.Socket = s
		default:
			a.DelegatedFrom = s
		}
	case keyPID:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || !isNumber(text) || int64(int(n)) != n {
			return fmt.Errorf("want an integer, got %s", clip(text))
		}
		a.PID, *hasPID = int(n), true
	case keyPIDStart:
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || !isNumber(text) {
			return fmt.Errorf("want an unsigned integer, got %s", clip(text))
		}
		a.PIDStart = n
	case keyCreatedAt:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || !isNumber(text) {
			return fmt.Errorf("want a number of seconds, got %s", clip(text))
		}
		a.CreatedAt = f
	case keyScopeAllow, keyScopeDeny:
		if text[0] != '[' {
			return fmt.Errorf("want an array of strings, got %s", clip(text))
		}
		sub := decoder{s: d.s[:v.end], i: v.start}
		list, err := sub.stringList()
		if err != nil {
			return err
		}
		if key == keyScopeAllow {
			a.ScopeAllow = list
		} else {
			a.ScopeDeny = list
		}
	}
	return nil
}

// isNumber reports whether text is a JSON number rather than another
// literal strconv would also take (a checked value is one of the two).
func isNumber(text string) bool { return text[0] == '-' || '0' <= text[0] && text[0] <= '9' }

// stringValue is the value of a checked string literal.
func stringValue(quoted string) string {
	content := quoted[1 : len(quoted)-1]
	if strings.IndexByte(content, '\\') < 0 && utf8.ValidString(content) {
		return content
	}
	return unquote(content)
}

// stringList reads a checked array whose elements must all be strings.
func (d *decoder) stringList() ([]string, error) {
	if d.s[d.i+1] == ']' {
		d.i += 2
		return []string{}, nil
	}
	list := make([]string, 0, 1+strings.Count(d.s[d.i:], ","))
	err := d.array(func(k int) error {
		if d.s[d.i] != '"' {
			v, _ := d.value()
			return fmt.Errorf("element %d: want a string, got %s", k, clip(d.s[v.start:v.end]))
		}
		s, err := d.str()
		list = append(list, s)
		return err
	})
	return list, err
}

// clip shortens a value quoted in an error.
func clip(text string) string {
	if len(text) > 40 {
		return text[:40] + "…"
	}
	return text
}

// Encode renders the registry as JSON with one allocation per line (easy
// to read and to grep): the seed's fields in the seed's order, then
// scope_deny, pid_start, created_at, then kept unknown fields sorted by
// key; the document's own unknown fields follow the allocations. It always
// ends in a newline and is never empty. The bytes are those json.Encoder
// (SetEscapeHTML(false): paths and names as they are, not \u003c) writes
// for the same values (FuzzRegistryCodec).
func (t *Table) Encode() []byte { return t.appendTo(nil) }

// appendTo is Encode into b's room (a buffer of an earlier rewrite, so
// that the second rewrite of a scoped command touches no new memory).
func (t *Table) appendTo(b []byte) []byte {
	size := 32
	for k, v := range t.extra {
		size += len(k) + len(v) + 4
	}
	for i := range t.Allocations {
		size += t.Allocations[i].encodedSizeHint()
	}
	b = slices.Grow(b[:0], size)
	b = append(b, `{"allocations": [`...)
	for i := range t.Allocations {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = t.Allocations[i].appendJSON(b)
	}
	if len(t.Allocations) > 0 {
		b = append(b, '\n')
	}
	b = append(b, ']')
	b = appendExtra(b, t.extra)
	return append(b, "}\n"...)
}

// encodedSizeHint is a little over what appendJSON writes for a (without
// foreign fields and escapes): 100 bytes of keys and punctuation, up to 60
// of numbers, the strings with their quotes.
func (a *Allocation) encodedSizeHint() int {
	n := 168 + len(a.Name) + len(a.Socket) + len(a.DelegatedFrom)
	for _, s := range a.ScopeAllow {
		n += len(s) + 3
	}
	for _, s := range a.ScopeDeny {
		n += len(s) + 3
	}
	for k, v := range a.extra {
		n += len(k) + len(v) + 4
	}
	return n
}

func (a *Allocation) appendJSON(b []byte) []byte {
	b = append(b, `{"name":`...)
	b = appendString(b, a.Name, false)
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(a.PID), 10)
	b = append(b, `,"socket":`...)
	b = appendString(b, a.Socket, false)
	b = append(b, `,"scope_allow":`...)
	b = appendStrings(b, a.ScopeAllow)
	b = append(b, `,"delegated_from":`...)
	if a.DelegatedFrom == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, a.DelegatedFrom, false)
	}
	b = append(b, `,"scope_deny":`...)
	b = appendStrings(b, a.ScopeDeny)
	b = append(b, `,"pid_start":`...)
	b = strconv.AppendUint(b, a.PIDStart, 10)
	b = append(b, `,"created_at":`...)
	b = appendFloat(b, a.CreatedAt)
	b = appendExtra(b, a.extra)
	return append(b, '}')
}

func appendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s, false)
	}
	return append(b, ']')
}

// appendExtra appends kept foreign fields, sorted by key, each as
// `,"key":value`: the key as json.Marshal quotes it, the value as it was
// read (it was checked then).
func appendExtra(b []byte, extra map[string]json.RawMessage) []byte {
	if len(extra) == 0 {
		return b
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		b = append(b, ',')
		b = appendString(b, k, true)
		b = append(b, ':')
		b = append(b, extra[k]...)
	}
	return b
}

// appendFloat writes f as encoding/json does: like ES6, %f between 1e-6
// and 1e21, else an exponent without padding. created_at is always finite
// (epoch seconds, or a value that was read as JSON); a NaN or infinity,
// which JSON cannot hold, is written as 0.
func appendFloat(b []byte, f float64) []byte {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does: \" \\ \b \f \n \r \t, other
// control bytes as \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped; with escapeHTML (json.Marshal's default, used for foreign keys)
// also < > & as \u003c \u003e \u0026.
func appendString(b []byte, s string, escapeHTML bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!escapeHTML || (c != '<' && c != '>' && c != '&')) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
