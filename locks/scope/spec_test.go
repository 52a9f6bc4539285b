package scope

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
		want Spec
	}{
		{"/project/src:write:recursive", Spec{"/project/src", Write, true}},
		{"/project/src:read", Spec{"/project/src", Read, false}},
		{"/project/src/:write", Spec{"/project/src", Write, false}},
		{"/project//src///:write", Spec{"/project/src", Write, false}},
		{"/project/src/../doc:write", Spec{"/project/doc", Write, false}},
		{"/project/./src:read:recursive", Spec{"/project/src", Read, true}},
		{"/../..:write", Spec{"/", Write, false}},
		{"/:write:recursive", Spec{"/", Write, true}},
		{"/a:b:write", Spec{"/a:b", Write, false}},
		{"/x:recursive:write", Spec{"/x:recursive", Write, false}},
		{"/x:read:write:recursive", Spec{"/x:read", Write, true}},
	}
	for _, tt := range tests {
		got, err := ParseSpec(tt.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		again, err := ParseSpec(got.String())
		if err != nil || again != got {
			t.Errorf("ParseSpec(%q) round trip: %+v, %v", got.String(), again, err)
		}
	}
}

func TestParseScopeRejects(t *testing.T) {
	for _, in := range []string{
		"", "/a", "/a:", ":write", "relative/path:write", "./a:write", "/a:WRITE", "/a:rw",
		"/a:write:Recursive", "/a:write:recursive:recursive", "/a:recursive", "/a:write:",
		"/a\x00b:write", "/a\xff:write", "~/a:write",
	} {
		_, err := ParseSpec(in)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("ParseSpec(%q) = %v, want ErrUsage", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "malformed scope") {
			t.Errorf("ParseSpec(%q) error %q does not say malformed scope", in, err)
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
		s, err := ParseSpec(root + tt.in + ":write")
		if err != nil {
			t.Fatal(err)
		}
		if got := Resolve(s).Path; got != realRoot+tt.want {
			t.Errorf("Resolve(%s) = %s, want %s", tt.in, got, realRoot+tt.want)
		}
	}
}
