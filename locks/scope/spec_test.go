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

// TestResolveLikeTheKernel: symlinks are followed before "..", as the
// kernel follows them, and the part that does not exist is cleaned
// lexically after the existing prefix is resolved.
func TestResolveLikeTheKernel(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"real/src", "a", "b/c"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"link":       filepath.Join(root, "real"),
		"dangling":   filepath.Join(root, "nowhere"),
		"a/lnk":      "../b/c", // relative: from the directory holding it
		"a/abs":      filepath.Join(root, "b/c"),
		"loop":       filepath.Join(root, "loop"),
		"a/chain":    "lnk",
		"real/upper": "..",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ in, want string }{
		{"/link/src", "/real/src"},                 // exists
		{"/link/src/not/yet", "/real/src/not/yet"}, // existing prefix resolved, rest kept
		{"/link", "/real"},                         // the link itself
		{"/absent/x", "/absent/x"},                 // nothing below root exists
		{"/absent/../x", "/x"},                     // a missing tail is cleaned lexically
		{"/dangling/x", "/nowhere/x"},              // where the kernel would create it
		{"/link/src/../src/new", "/real/src/new"},  // .. of a real directory
		{"/real/src", "/real/src"},                 // no symlink: unchanged
		{"/a/lnk/../x", "/b/x"},                    // the kernel's .., not the lexical /a/x
		{"/a/abs/../x", "/b/x"},
		{"/a/chain/../../real", "/real"}, // a chain of links, then ..
		{"/real/upper/a", "/a"},          // a link to ..
		{"//link//src/./", "/real/src"},
	}
	for _, tt := range tests {
		got, err := Resolve(root + tt.in)
		if err != nil || got != root+tt.want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", tt.in, got, err, root+tt.want)
		}
	}
	if _, err := Resolve(root + "/loop/x"); err == nil || !strings.Contains(err.Error(), "symbolic links") {
		t.Errorf("Resolve through a symlink loop: %v", err)
	}

	s, err := ResolveSpec("lnk/../new:write:recursive", filepath.Join(root, "a"))
	if want := (Spec{root + "/b/new", Write, true}); err != nil || s != want {
		t.Errorf("ResolveSpec relative = %+v, %v; want %+v", s, err, want)
	}
	for _, bad := range []string{"x", "/x:rw", "", "rel\x00:write"} {
		if _, err := ResolveSpec(bad, root); !errors.Is(err, ErrUsage) {
			t.Errorf("ResolveSpec(%q) = %v, want ErrUsage", bad, err)
		}
	}
}
