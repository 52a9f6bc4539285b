package locks

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeEncoded reads a payload laid out exactly as Encode writes one: the
// fields in Encode's order, no spaces, only the escapes a JSON string may
// hold. For anything else (a payload another program wrote, a torn or
// corrupt file) it reports false, and encoding/json reads it. A waiter
// reads its holder's payload at least once, and a first json.Unmarshal in
// a fresh process costs ~50 µs of CPU (its reflection cache, measured
// under contention), about half of what queueing for the lock costs.
// FuzzDecodeEncoded holds it to json.Unmarshal's result.
func decodeEncoded(data []byte) (Payload, bool) {
	s := payloadScanner{b: data}
	var p Payload
	if !(s.lit(`{"run_id":`) && s.str(&p.RunID) &&
		s.lit(`,"lock_id":`) && s.str(&p.LockID) &&
		s.lit(`,"pid":`) && s.int(&p.Pid) &&
		s.lit(`,"created_at":`) && s.float(&p.CreatedAt) &&
		s.lit(`,"expires_at":`) && s.float(&p.ExpiresAt)) {
		return Payload{}, false
	}
	ok := s.optStr(`,"host":`, &p.Host) &&
		s.optStr(`,"boot_id":`, &p.BootID) &&
		s.optUint(`,"pid_ns":`, &p.PidNS) &&
		s.optUint(`,"pid_start":`, &p.PidStart) &&
		s.optStr(`,"command":`, &p.Command) &&
		s.optUint(`,"fencing_token":`, &p.FencingToken)
	if !ok {
		return Payload{}, false
	}
	p.Hold = s.lit(`,"hold":true`)
	if !s.lit("}") {
		return Payload{}, false
	}
	for _, c := range s.b[s.i:] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return Payload{}, false
		}
	}
	return p, true
}

type payloadScanner struct {
	b []byte
	i int
}

// lit consumes lit if the input continues with it.
func (s *payloadScanner) lit(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *payloadScanner) optStr(key string, dst *string) bool {
	return !s.lit(key) || s.str(dst)
}

func (s *payloadScanner) optUint(key string, dst *uint64) bool {
	return !s.lit(key) || s.uint(dst)
}

// str reads a JSON string as encoding/json does. It gives up (false) on
// what it would have to repair rather than decode: invalid UTF-8 and lone
// surrogates, which encoding/json replaces with U+FFFD.
func (s *payloadScanner) str(dst *string) bool {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return false
	}
	i := s.i + 1
	start := i
	var out []byte // nil while the string has no escapes
	for i < len(s.b) {
		c := s.b[i]
		switch {
		case c == '"':
			raw := s.b[start:i]
			if !utf8.Valid(raw) {
				return false
			}
			if out == nil {
				*dst = string(raw)
			} else {
				*dst = string(append(out, raw...))
			}
			s.i = i + 1
			return true
		case c < 0x20:
			return false
		case c != '\\':
			i++
			continue
		}
		// An escape: flush what came before it.
		if !utf8.Valid(s.b[start:i]) {
			return false
		}
		out = append(out, s.b[start:i]...)
		if i+1 >= len(s.b) {
			return false
		}
		switch e := s.b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
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
			if i+6 > len(s.b) {
				return false
			}
			n, err := strconv.ParseUint(string(s.b[i+2:i+6]), 16, 16)
			if err != nil || utf16.IsSurrogate(rune(n)) {
				return false
			}
			out = utf8.AppendRune(out, rune(n))
			i += 4
		default:
			return false
		}
		i += 2
		start = i
	}
	return false
}

// number returns the next JSON number token, checked against JSON's
// grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; integral says
// whether it had neither fraction nor exponent.
func (s *payloadScanner) number() (tok string, integral bool, ok bool) {
	b, i := s.b, s.i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return "", false, false
	}
	integral = true
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return "", false, false
		}
		integral = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return "", false, false
		}
		integral = false
	}
	tok = string(b[s.i:i])
	s.i = i
	return tok, integral, true
}

func (s *payloadScanner) int(dst *int) bool {
	tok, integral, ok := s.number()
	if !ok || !integral {
		return false
	}
	n, err := strconv.ParseInt(tok, 10, strconv.IntSize)
	*dst = int(n)
	return err == nil
}

func (s *payloadScanner) uint(dst *uint64) bool {
	tok, integral, ok := s.number()
	if !ok || !integral || tok[0] == '-' {
		return false
	}
	n, err := strconv.ParseUint(tok, 10, 64)
	*dst = n
	return err == nil
}

func (s *payloadScanner) float(dst *float64) bool {
	tok, _, ok := s.number()
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(tok, 64)
	*dst = f
	return err == nil
}
