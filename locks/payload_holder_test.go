package locks

import (
	"strings"
	"testing"
	"time"
)

// A conflict is one line even when the holder's command is a multi-line
// script.
func TestDescribeKeepsOneLine(t *testing.T) {
	h := &Holder{Payload: Payload{Pid: 7, Host: "h", Command: "sh -c 'a\nb\tc'"}}
	if d := h.Describe(time.Now()); strings.ContainsAny(d, "\n\t") {
		t.Fatalf("Describe = %q: holds a control character", d)
	}
}
