package testenv

import "testing"

func TestGORACE(t *testing.T) {
	for _, c := range []struct{ have, want string }{
		{"", "atexit_sleep_ms=0"},
		{"halt_on_error=1", "halt_on_error=1 atexit_sleep_ms=0"},
		{"atexit_sleep_ms=50", "atexit_sleep_ms=50"},
	} {
		t.Setenv("GORACE", c.have)
		if got := GORACE(); got != c.want {
			t.Errorf("GORACE=%q: got %q, want %q", c.have, got, c.want)
		}
	}
}
