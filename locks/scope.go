package locks

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ScopeMode is what a scope lets its holder do with the paths it covers.
type ScopeMode uint8

const (
	ScopeRead ScopeMode = iota + 1
	ScopeWrite
)

func (m ScopeMode) String() string {
	switch m {
	case ScopeRead:
		return "read"
	case ScopeWrite:
		return "write"
	}
	return fmt.Sprintf("ScopeMode(%d)", uint8(m))
}

// Scope is one `PATH:MODE[:recursive]` item of an allocation. A
// non-recursive scope covers Path and its direct entries; a recursive one
// covers the whole subtree under Path. Path is absolute and clean.
type Scope struct {
	Path      string
	Mode      ScopeMode
	Recursive bool
}

// String renders the scope in the registry's normalised form.
func (s Scope) String() string {
	out := s.Path + ":" + s.Mode.String()
	if s.Recursive {
		out += ":recursive"
	}
	return out
}

// ParseScope reads `PATH:MODE[:recursive]`. The path may itself contain
// colons: the suffixes are taken from the right. PATH must be absolute; it
// is cleaned lexically (trailing slashes, `.`, `..`) but the filesystem is
// not consulted — ResolveScope does that. The error quotes the offending
// text and matches ErrScopeUsage.
func ParseScope(text string) (Scope, error) {
	s, err := splitScope(text)
	if err != nil {
		return Scope{}, err
	}
	s.Path = filepath.Clean(s.Path)
	return s, nil
}

// splitScope is ParseScope without the cleaning, which cannot fail: the
// registry decoder checks every scope it reads with it.
func splitScope(text string) (Scope, error) {
	rest, recursive := strings.CutSuffix(text, ":recursive")
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return Scope{}, scopeSyntaxError(text, "want PATH:MODE[:recursive]")
	}
	path, modeText := rest[:i], rest[i+1:]
	var mode ScopeMode
	switch modeText {
	case "read":
		mode = ScopeRead
	case "write":
		mode = ScopeWrite
	default:
		return Scope{}, scopeSyntaxError(text, fmt.Sprintf("mode %q is not read or write", modeText))
	}
	if err := checkScopePath(path); err != nil {
		return Scope{}, scopeSyntaxError(text, err.Error())
	}
	return Scope{Path: path, Mode: mode, Recursive: recursive}, nil
}

func checkScopePath(path string) error {
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

func scopeSyntaxError(text, why string) error {
	return scopeUsagef("malformed scope %q: %s", text, why)
}

// ParseScopes parses every text; the first malformed one is the error.
func ParseScopes(texts []string) ([]Scope, error) {
	out := make([]Scope, 0, len(texts))
	for _, t := range texts {
		s, err := ParseScope(t)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ResolveScope resolves symlinks in the scope's path where the path exists:
// the longest existing prefix is resolved with filepath.EvalSymlinks and the
// rest appended, so a scope on a directory not yet created still names the
// place it will be created in. ".." was already applied lexically by
// ParseScope.
func ResolveScope(s Scope) Scope {
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

// scopeStrings renders scopes in normalised form.
func scopeStrings(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = s.String()
	}
	return out
}

// writeScopes keeps the write items: only they take part in conflicts.
func writeScopes(scopes []Scope) []Scope {
	var out []Scope
	for _, s := range scopes {
		if s.Mode == ScopeWrite {
			out = append(out, s)
		}
	}
	return out
}
