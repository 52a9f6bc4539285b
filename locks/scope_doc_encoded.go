package locks

import "strings"

// decodeAllocationAsEncoded reads an allocation laid out exactly as
// encodeAllocation writes it — withlock's own registry, nearly always —
// taking the white space and key before each value as one literal instead
// of token by token; the values are read as decodeAllocation reads them.
// At the first difference (another order, other spacing, a field it does
// not know, a value decodeAllocation would refuse) it reports false, and
// the caller reads the allocation again from where it began with
// decodeAllocation, which also gives the error.
func decodeAllocationAsEncoded(s *jsonScanner) (a ScopeAllocation, ok bool) {
	const in = ",\n      "
	s.space()
	ok = s.expect("{\n      \"name\": ") && decodeString(s, &a.Name) == nil && a.Name != "" &&
		s.expect(in+`"pid": `) && decodeInt(s, &a.PID) == nil &&
		s.expect(in+`"socket": `) && decodeString(s, &a.Socket) == nil &&
		s.expect(in+`"scope_allow": `) && decodeScopeList(s, &a.ScopeAllow) == nil &&
		s.expect(in+`"delegated_from": `) && decodeString(s, &a.DelegatedFrom) == nil &&
		s.expect(in+`"scope_deny": `) && decodeScopeList(s, &a.ScopeDeny) == nil &&
		s.expect(in+`"pid_start": `) && decodeUint(s, &a.PIDStart) == nil &&
		s.expect(in+`"created_at": `) && decodeFloat(s, &a.CreatedAt) == nil &&
		s.expect("\n    }")
	return a, ok
}

// expect consumes text if the input continues with it.
func (s *jsonScanner) expect(text string) bool {
	if !strings.HasPrefix(s.data[s.pos:], text) {
		return false
	}
	s.pos += len(text)
	return true
}
