package scope

import (
	"fmt"
	"path/filepath"
	"strings"
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

// ParseSpec reads `PATH:MODE[:recursive]`. The path may itself contain
// colons: the suffixes are taken from the right. PATH must be absolute; it
// is cleaned lexically (trailing slashes, `.`, `..`) but the filesystem is
// not consulted — Resolve does that. The error quotes the offending
// text and matches ErrUsage.
func ParseSpec(text string) (Spec, error) {
	s, err := splitSpec(text)
	if err != nil {
		return Spec{}, err
	}
	s.Path = filepath.Clean(s.Path)
	return s, nil
}

// splitSpec is ParseSpec without the cleaning, which cannot fail: the
// registry decoder checks every scope it reads with it.
func splitSpec(text string) (Spec, error) {
	rest, recursive := strings.CutSuffix(text, ":recursive")
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return Spec{}, syntaxError(text, "want PATH:MODE[:recursive]")
	}
	path, modeText := rest[:i], rest[i+1:]
	var mode Mode
	switch modeText {
	case "read":
		mode = Read
	case "write":
		mode = Write
	default:
		return Spec{}, syntaxError(text, fmt.Sprintf("mode %q is not read or write", modeText))
	}
	if err := checkPath(path); err != nil {
		return Spec{}, syntaxError(text, err.Error())
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

func syntaxError(text, why string) error {
	return usagef("malformed scope %q: %s", text, why)
}

// ParseSpecs parses every text; the first malformed one is the error.
func ParseSpecs(texts []string) ([]Spec, error) {
	out := make([]Spec, 0, len(texts))
	for _, t := range texts {
		s, err := ParseSpec(t)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Resolve resolves symlinks in the scope's path where the path exists:
// the longest existing prefix is resolved with filepath.EvalSymlinks and the
// rest appended, so a scope on a directory not yet created still names the
// place it will be created in. ".." was already applied lexically by
// ParseSpec.
func Resolve(s Spec) Spec {
	s.Path = resolveExistingPrefix(s.Path)
	return s
}

func resolveExistingPrefix(path string) string {
	tail := ""
	for {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			return filepath.Join(real, tail)
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(path, tail)
		}
		tail = filepath.Join(filepath.Base(path), tail)
		path = parent
	}
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
