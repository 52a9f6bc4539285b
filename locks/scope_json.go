package locks

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// jsonScanner reads JSON exactly as strictly as encoding/json does (a fuzz
// test holds the two to the same verdicts), in one pass and without
// reflection: the registry is read on every start and exit, and with a
// thousand allocations encoding/json's map-of-RawMessage decoding alone
// took longer than the whole operation may. Values the registry does not
// know are validated and kept as raw bytes.
type jsonScanner struct {
	data  []byte
	pos   int
	depth int
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte, 0 at the end.
func (s *jsonScanner) peek() byte {
	s.space()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// document reads one top-level value with read and checks nothing follows.
func (s *jsonScanner) document(read func() error) error {
	if err := read(); err != nil {
		return err
	}
	if s.peek() != 0 || s.pos < len(s.data) {
		return s.errorf("data after the top-level value")
	}
	return nil
}

// skip validates any one value and returns its bytes.
func (s *jsonScanner) skip() (json.RawMessage, error) {
	if s.peek() == 0 {
		return nil, s.errorf("unexpected end")
	}
	start := s.pos
	var err error
	switch c := s.data[s.pos]; {
	case c == '{':
		err = s.object(func([]byte) error { _, err := s.skip(); return err })
	case c == '[':
		err = s.array(func() error { _, err := s.skip(); return err })
	case c == '"':
		_, _, err = s.stringToken()
	case c == '-' || ('0' <= c && c <= '9'):
		_, err = s.number()
	default:
		err = s.literal()
	}
	return s.data[start:s.pos], err
}

func (s *jsonScanner) nest() error {
	if s.depth++; s.depth > maxJSONDepth {
		return s.errorf("nested too deep")
	}
	return nil
}

// object reads {...}, calling field with the scanner at each value. The key
// is only valid during the call (it may alias the input).
func (s *jsonScanner) object(field func(key []byte) error) error {
	if s.peek() != '{' {
		return s.errorf("want an object")
	}
	if err := s.nest(); err != nil {
		return err
	}
	defer func() { s.depth-- }()
	s.pos++
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.errorf("want a string key")
		}
		key, err := s.strBytes()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return s.errorf("want ':' after key")
		}
		s.pos++
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or '}' in object")
		}
	}
}

// array reads [...], calling elem with the scanner at each element.
func (s *jsonScanner) array(elem func() error) error {
	if s.peek() != '[' {
		return s.errorf("want an array")
	}
	if err := s.nest(); err != nil {
		return err
	}
	defer func() { s.depth-- }()
	s.pos++
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("want ',' or ']' in array")
		}
	}
}

// null consumes a null if one comes next.
func (s *jsonScanner) null() bool {
	if s.peek() == 'n' && len(s.data)-s.pos >= 4 && string(s.data[s.pos:s.pos+4]) == "null" {
		s.pos += 4
		return true
	}
	return false
}

func (s *jsonScanner) literal() error {
	for _, lit := range []string{"true", "false", "null"} {
		if len(s.data)-s.pos >= len(lit) && string(s.data[s.pos:s.pos+len(lit)]) == lit {
			s.pos += len(lit)
			return nil
		}
	}
	return s.errorf("unexpected character %q", s.data[s.pos])
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? and returns
// its text (aliasing the input).
func (s *jsonScanner) number() ([]byte, error) {
	if s.peek() == 0 {
		return nil, s.errorf("unexpected end")
	}
	start := s.pos
	s.accept('-')
	switch {
	case s.accept('0'):
	case s.digits() == 0:
		return nil, s.errorf("want a number")
	}
	if s.accept('.') && s.digits() == 0 {
		return nil, s.errorf("want digits after '.'")
	}
	if s.accept('e') || s.accept('E') {
		if !s.accept('+') {
			s.accept('-')
		}
		if s.digits() == 0 {
			return nil, s.errorf("want digits in exponent")
		}
	}
	return s.data[start:s.pos], nil
}

func (s *jsonScanner) accept(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

func (s *jsonScanner) digits() int {
	n := 0
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

// str reads a string and returns its value.
func (s *jsonScanner) str() (string, error) {
	b, err := s.strBytes()
	return string(b), err
}

// strBytes reads a string; plain ones are sliced out of the input (the
// result aliases it), those with escapes or invalid UTF-8 are decoded by
// encoding/json, so the replacement of bad bytes and lone surrogates is
// exactly its.
func (s *jsonScanner) strBytes() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errorf("want a string")
	}
	token, ascii, err := s.stringToken()
	if err != nil {
		return nil, err
	}
	if inner := token[1 : len(token)-1]; ascii || (!hasByte(inner, '\\') && utf8.Valid(inner)) {
		return inner, nil
	}
	var out string
	if err := json.Unmarshal(token, &out); err != nil {
		return nil, s.errorf("%v", err)
	}
	return []byte(out), nil
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// stringToken validates a string token (the scanner at its opening quote)
// and returns it with its quotes, and whether it is plain ASCII without
// escapes (its content is then its value as it stands).
func (s *jsonScanner) stringToken() (token []byte, ascii bool, err error) {
	start := s.pos
	s.pos++
	ascii = true
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.data[start:s.pos], ascii, nil
		case c < 0x20:
			return nil, false, s.errorf("control character in string")
		case c == '\\':
			if err := s.escape(); err != nil {
				return nil, false, err
			}
			ascii = false
			continue
		case c >= utf8.RuneSelf:
			ascii = false
		}
		s.pos++
	}
	return nil, false, s.errorf("unterminated string")
}

func (s *jsonScanner) escape() error {
	s.pos++ // the backslash
	if s.pos >= len(s.data) {
		return s.errorf("unterminated escape")
	}
	switch s.data[s.pos] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos++
		return nil
	case 'u':
		s.pos++
		for range 4 {
			if s.pos >= len(s.data) || !isHexDigit(s.data[s.pos]) {
				return s.errorf("bad \\u escape")
			}
			s.pos++
		}
		return nil
	}
	return s.errorf("bad escape")
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
