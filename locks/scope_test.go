package locks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	tests := []struct {
		in   string
		want Scope
	}{
		{"/project/src:write:recursive", Scope{"/project/src", ScopeWrite, true}},
		{"/project/src:read", Scope{"/project/src", ScopeRead, false}},
		{"/project/src/:write", Scope{"/project/src", ScopeWrite, false}},
		{"/project//src///:write", Scope{"/project/src", ScopeWrite, false}},
		{"/project/src/../doc:write", Scope{"/project/doc", ScopeWrite, false}},
		{"/project/./src:read:recursive", Scope{"/project/src", ScopeRead, true}},
		{"/../..:write", Scope{"/", ScopeWrite, false}},
		{"/:write:recursive", Scope{"/", ScopeWrite, true}},
		{"/a:b:write", Scope{"/a:b", ScopeWrite, false}},
		{"/x:recursive:write", Scope{"/x:recursive", ScopeWrite, false}},
		{"/x:read:write:recursive", Scope{"/x:read", ScopeWrite, true}},
	}
	for _, tt := range tests {
		got, err := ParseScope(tt.in)
		if err != nil {
			t.Errorf("ParseScope(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseScope(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		again, err := ParseScope(got.String())
		if err != nil || again != got {
			t.Errorf("ParseScope(%q) round trip: %+v, %v", got.String(), again, err)
		}
	}
}

func TestParseScopeRejects(t *testing.T) {
	for _, in := range []string{
		"", "/a", "/a:", ":write", "relative/path:write", "./a:write", "/a:WRITE", "/a:rw",
		"/a:write:Recursive", "/a:write:recursive:recursive", "/a:recursive", "/a:write:",
		"/a\x00b:write", "/a\xff:write", "~/a:write",
	} {
		_, err := ParseScope(in)
		if !errors.Is(err, ErrScopeUsage) {
			t.Errorf("ParseScope(%q) = %v, want ErrScopeUsage", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "malformed scope") {
			t.Errorf("ParseScope(%q) error %q does not say malformed scope", in, err)
		}
	}
}

func TestResolveScopeFollowsSymlinksOfExistingPrefix(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.MkdirAll(filepath.Join(real, "src"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "nowhere"), filepath.Join(root, "dangling")); err != nil {
		t.Fatal(err)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"/link/src", "/real/src"},                 // exists
		{"/link/src/not/yet", "/real/src/not/yet"}, // existing prefix resolved, rest kept
		{"/link", "/real"},                         // the link itself
		{"/absent/x", "/absent/x"},                 // nothing below root exists
		{"/dangling/x", "/dangling/x"},             // a dangling link is kept as named
		{"/link/src/../src/new", "/real/src/new"},  // lexical .. first
		{"/real/src", "/real/src"},                 // no symlink: unchanged
	}
	for _, tt := range tests {
		s, err := ParseScope(root + tt.in + ":write")
		if err != nil {
			t.Fatal(err)
		}
		if got := ResolveScope(s).Path; got != realRoot+tt.want {
			t.Errorf("ResolveScope(%s) = %s, want %s", tt.in, got, realRoot+tt.want)
		}
	}
}
