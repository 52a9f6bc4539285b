package scope

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Mode is what a scope lets its holder do with the paths it covers.
type Mode uint8

const (
	Read Mode = iota + 1
	Write
)

func (m Mode) String() string {
	switch m {
	case Read:
		return "read"
	case Write:
		return "write"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Spec is one `PATH:MODE[:recursive]` item of an allocation. A
// non-recursive scope covers Path and its direct entries; a recursive one
// covers the whole subtree under Path. Path is absolute and clean.
type Spec struct {
	Path      string
	Mode      Mode
	Recursive bool
}

// String renders the scope in the registry's normalised form.
func (s Spec) String() string {
	out := s.Path + ":" + s.Mode.String()
	if s.Recursive {
		out += ":recursive"
	}
	return out
}

// ParseSpec reads `PATH:MODE[:recursive]` in normalised form, as the
// registry stores it. The path may itself contain colons: the suffixes are
// taken from the right. PATH must be absolute; it is cleaned lexically
// (trailing slashes, `.`, `..`) but the filesystem is not consulted: a
// scope a user gives goes through ResolveSpec instead, which resolves
// symlinks before "..". The error quotes the offending text and matches
// ErrUsage.
func ParseSpec(text string) (Spec, error) {
	s, err := cutMode(text)
	if err == nil {
		err = checkPath(s.Path)
	}
	if err != nil {
		return Spec{}, usagef("malformed scope %q: %v", text, err)
	}
	s.Path = filepath.Clean(s.Path)
	return s, nil
}

// cutMode takes the mode and ":recursive" off the right of text; the rest
// is the path, unchecked.
func cutMode(text string) (Spec, error) {
	rest, recursive := strings.CutSuffix(text, ":recursive")
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return Spec{}, errors.New("want PATH:MODE[:recursive]")
	}
	path, modeText := rest[:i], rest[i+1:]
	var mode Mode
	switch modeText {
	case "read":
		mode = Read
	case "write":
		mode = Write
	default:
		return Spec{}, fmt.Errorf("mode %q is not read or write", modeText)
	}
	return Spec{Path: path, Mode: mode, Recursive: recursive}, nil
}

func checkPath(path string) error {
	switch {
	case path == "":
		return fmt.Errorf("empty path")
	case !strings.HasPrefix(path, "/"):
		return fmt.Errorf("path is not absolute")
	case strings.ContainsRune(path, 0):
		return fmt.Errorf("path holds a NUL byte")
	case !utf8.ValidString(path):
		return fmt.Errorf("path is not valid UTF-8")
	}
	return nil
}

// ResolveSpec reads a scope as a user gives it (--allow) and normalises it
// the way the kernel would reach the path: a relative PATH is taken from
// cwd, then Resolve. Errors match ErrUsage.
func ResolveSpec(text, cwd string) (Spec, error) {
	s, err := cutMode(text)
	if err != nil {
		return Spec{}, usagef("malformed scope %q: %v", text, err)
	}
	if s.Path != "" && !strings.HasPrefix(s.Path, "/") {
		s.Path = cwd + "/" + s.Path // not Join: Resolve, not Clean, takes the ".."
	}
	if err := checkPath(s.Path); err != nil {
		return Spec{}, usagef("malformed scope %q: %v", text, err)
	}
	if s.Path, err = Resolve(s.Path); err != nil {
		return Spec{}, usagef("malformed scope %q: %v", text, err)
	}
	return s, nil
}

// maxSymlinks is how many symlinks Resolve follows before giving up, as
// the kernel does (ELOOP after 40).
const maxSymlinks = 40

// Resolve returns the absolute path the kernel reaches through path:
// component by component from the root, a symlink replaced by its target
// (relative to the directory holding it) before the next component — so
// "lnk/.." is the parent of lnk's target, not the directory holding lnk —
// and ".." taken from the directory actually reached. From the first
// component that does not exist (or cannot be looked at) the rest is
// cleaned lexically: a scope on a directory not yet created names the
// place it will be created in. The result is clean. Only a symlink loop is
// an error.
func Resolve(path string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("path %q is not absolute", path)
	}
	resolved := "/"
	rest := splitComponents(path)
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, name)
		target, err := os.Readlink(next)
		switch {
		case errors.Is(err, syscall.EINVAL): // there, and no symlink
			resolved = next
			continue
		case err != nil: // not there (or not reachable): the rest is named, not found
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if links++; links > maxSymlinks {
			return "", fmt.Errorf("too many levels of symbolic links at %s", next)
		}
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		rest = append(splitComponents(target), rest...)
	}
	return resolved, nil
}

// splitComponents splits a path into its names, dropping empty ones.
func splitComponents(path string) []string {
	return strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
}

// specStrings renders scopes in normalised form.
func specStrings(scopes []Spec) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = s.String()
	}
	return out
}

// writeSpecs keeps the write items: only they take part in conflicts.
func writeSpecs(scopes []Spec) []Spec {
	var out []Spec
	for _, s := range scopes {
		if s.Mode == Write {
			out = append(out, s)
		}
	}
	return out
}
