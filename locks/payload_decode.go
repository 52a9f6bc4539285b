package locks

import (
	"strconv"
	"strings"
)

// decodeEncoded reads a payload laid out as Encode writes one: the fields
// in Encode's order, no space between a value and the next key. For
// anything else (a payload another program wrote, a torn or corrupt file)
// it reports false, and encoding/json reads it. A waiter reads its
// holder's payload at least once, and a first json.Unmarshal in a fresh
// process costs ~50 µs of CPU (its reflection cache, measured under
// contention), about half of what queueing for the lock costs. The values
// are read by the scope registry's jsonScanner, held to encoding/json by
// its own fuzz test; FuzzDecodeEncoded holds this to json.Unmarshal's
// result.
func decodeEncoded(data []byte) (Payload, bool) {
	s := payloadScanner{jsonScanner{data: string(data)}}
	var p Payload
	if !(s.lit(`{"run_id":`) && s.text(&p.RunID) &&
		s.lit(`,"lock_id":`) && s.text(&p.LockID) &&
		s.lit(`,"pid":`) && s.int(&p.Pid) &&
		s.lit(`,"created_at":`) && s.float(&p.CreatedAt) &&
		s.lit(`,"expires_at":`) && s.float(&p.ExpiresAt)) {
		return Payload{}, false
	}
	ok := (!s.lit(`,"host":`) || s.text(&p.Host)) &&
		(!s.lit(`,"boot_id":`) || s.text(&p.BootID)) &&
		(!s.lit(`,"pid_ns":`) || s.uint(&p.PidNS)) &&
		(!s.lit(`,"pid_start":`) || s.uint(&p.PidStart)) &&
		(!s.lit(`,"command":`) || s.text(&p.Command)) &&
		(!s.lit(`,"fencing_token":`) || s.uint(&p.FencingToken))
	p.Hold = s.lit(`,"hold":true`)
	if !ok || !s.lit("}") {
		return Payload{}, false
	}
	if s.space(); s.pos != len(s.data) {
		return Payload{}, false
	}
	return p, true
}

// payloadScanner reads the payload's fixed layout: its keys as literals,
// its values with jsonScanner.
type payloadScanner struct{ jsonScanner }

// lit consumes lit if the input continues with it.
func (s *payloadScanner) lit(lit string) bool {
	if !strings.HasPrefix(s.data[s.pos:], lit) {
		return false
	}
	s.pos += len(lit)
	return true
}

func (s *payloadScanner) text(dst *string) bool {
	v, err := s.str()
	*dst = v
	return err == nil
}

// integer reads a number without fraction or exponent, as encoding/json
// requires of one decoded into an integer.
func (s *payloadScanner) integer() (string, bool) {
	tok, err := s.number()
	return tok, err == nil && !strings.ContainsAny(tok, ".eE")
}

func (s *payloadScanner) int(dst *int) bool {
	tok, ok := s.integer()
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(tok, 10, strconv.IntSize)
	*dst = int(n)
	return err == nil
}

func (s *payloadScanner) uint(dst *uint64) bool {
	tok, ok := s.integer()
	if !ok || tok[0] == '-' {
		return false
	}
	n, err := strconv.ParseUint(tok, 10, 64)
	*dst = n
	return err == nil
}

func (s *payloadScanner) float(dst *float64) bool {
	tok, err := s.number()
	if err != nil {
		return false
	}
	f, err := strconv.ParseFloat(tok, 64)
	*dst = f
	return err == nil
}
