package locks

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonScanner reads JSON exactly as strictly as encoding/json does (a fuzz
// test holds the two to the same verdicts), in one pass and without
// reflection: the registry is read on every start and exit, and with a
// thousand allocations encoding/json's map-of-RawMessage decoding alone
// took longer than the whole operation may. Values the registry does not
// know are validated and kept as raw bytes.
//
// It reads a string, converted from the file's bytes once, so that the
// values it returns (names, paths, number texts) are slices of it rather
// than thousands of small copies.
type jsonScanner struct {
	data  string
	pos   int
	depth int
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

// jsonSpace marks JSON's white space.
var jsonSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// space skips white space. The registry is indented, so a fifth of its
// bytes are skipped here, most of them runs of spaces: those go four at a
// time.
func (s *jsonScanner) space() {
	i := s.pos
	for i < len(s.data) && jsonSpace[s.data[i]] {
		i++
		for i+4 <= len(s.data) && s.data[i:i+4] == "    " {
			i += 4
		}
	}
	s.pos = i
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

// skip validates any one value and returns its text.
func (s *jsonScanner) skip() (string, error) {
	if s.peek() == 0 {
		return "", s.errorf("unexpected end")
	}
	start := s.pos
	var err error
	switch c := s.data[s.pos]; {
	case c == '{':
		err = s.object(func(string) error { _, err := s.skip(); return err })
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

// object reads {...}, calling field with the scanner at each value.
func (s *jsonScanner) object(field func(key string) error) error {
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
		key, err := s.str()
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
	if s.peek() == 'n' && strings.HasPrefix(s.data[s.pos:], "null") {
		s.pos += 4
		return true
	}
	return false
}

func (s *jsonScanner) literal() error {
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(s.data[s.pos:], lit) {
			s.pos += len(lit)
			return nil
		}
	}
	return s.errorf("unexpected character %q", s.data[s.pos])
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? and returns
// its text.
func (s *jsonScanner) number() (string, error) {
	if s.peek() == 0 {
		return "", s.errorf("unexpected end")
	}
	start := s.pos
	s.accept('-')
	switch {
	case s.accept('0'):
	case s.digits() == 0:
		return "", s.errorf("want a number")
	}
	if s.accept('.') && s.digits() == 0 {
		return "", s.errorf("want digits after '.'")
	}
	if s.accept('e') || s.accept('E') {
		if !s.accept('+') {
			s.accept('-')
		}
		if s.digits() == 0 {
			return "", s.errorf("want digits in exponent")
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
	i := s.pos
	for i < len(s.data) && '0' <= s.data[i] && s.data[i] <= '9' {
		i++
	}
	n := i - s.pos
	s.pos = i
	return n
}

// str reads a string and returns its value. Plain strings are sliced out
// of the input and escapes are decoded here; strings with invalid UTF-8 or
// an escaped surrogate are decoded by encoding/json, so the replacement of
// bad bytes and lone surrogates is exactly its.
func (s *jsonScanner) str() (string, error) {
	if s.peek() != '"' {
		return "", s.errorf("want a string")
	}
	token, ascii, err := s.stringToken()
	if err != nil {
		return "", err
	}
	inner := token[1 : len(token)-1]
	if ascii || (strings.IndexByte(inner, '\\') < 0 && utf8.ValidString(inner)) {
		return inner, nil
	}
	if out, ok := unescape(inner); ok {
		return out, nil
	}
	var out string
	if err := json.Unmarshal([]byte(token), &out); err != nil {
		return "", s.errorf("%v", err)
	}
	return out, nil
}

// unescape decodes the content of a string token stringToken has checked.
// It reports false for what encoding/json would repair rather than decode:
// invalid UTF-8 and escaped surrogates (a pair, or a lone one). A fresh
// process's first json.Unmarshal builds its reflection cache (~50 µs), and
// a lock payload's command often has a quote or an & to escape.
func unescape(inner string) (string, bool) {
	if !utf8.ValidString(inner) { // escapes are ASCII: the raw runs are valid alike
		return "", false
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch e := inner[i]; e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			n, err := strconv.ParseUint(inner[i+1:i+5], 16, 16)
			if err != nil || utf16.IsSurrogate(rune(n)) {
				return "", false
			}
			out = utf8.AppendRune(out, rune(n))
			i += 4
		default: // '"', '\\', '/'
			out = append(out, e)
		}
	}
	return string(out), true
}

// jsonPlain marks the bytes that stand for themselves in a string: printable
// ASCII but the quote and the backslash.
var jsonPlain = func() (plain [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// stringToken validates a string token (the scanner at its opening quote)
// and returns it with its quotes, and whether it is plain ASCII without
// escapes (its content is then its value as it stands).
func (s *jsonScanner) stringToken() (token string, ascii bool, err error) {
	start := s.pos
	i := s.pos + 1
	ascii = true
	for {
		for i < len(s.data) && jsonPlain[s.data[i]] {
			i++
		}
		if i >= len(s.data) {
			s.pos = i
			return "", false, s.errorf("unterminated string")
		}
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return s.data[start:s.pos], ascii, nil
		case c < 0x20:
			s.pos = i
			return "", false, s.errorf("control character in string")
		case c == '\\':
			s.pos = i
			if err := s.escape(); err != nil {
				return "", false, err
			}
			i = s.pos
			ascii = false
		default: // a byte of a multi-byte sequence; encoding/json judges it
			ascii = false
			i++
		}
	}
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
