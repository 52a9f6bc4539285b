package locks

import (
	"errors"
	"fmt"
	"strings"
)

// The scope registry's sentinel errors. Callers match them with errors.Is;
// the command line maps them to exit statuses (SPEC §2): ErrScopeConflict
// → 75, ErrScopeUsage → 64, ErrRegistryUnusable (which ErrRegistryCorrupt
// and ErrRegistryBusy also match) → 73.
var (
	// ErrScopeConflict: a requested write scope overlaps another live
	// holder's effective write scope, or a delegated request does not lie
	// within its parent's. Returned as a *ScopeConflictError.
	ErrScopeConflict = errors.New("scope conflict")

	// ErrScopeUsage: the request itself is wrong — malformed scope, unknown
	// parent, duplicate live name, bad name.
	ErrScopeUsage = errors.New("scope usage")

	// ErrRegistryUnusable: the registry could not be read or written (unsafe
	// place, OS error, corrupt, lock not granted in time).
	ErrRegistryUnusable = errors.New("scope registry unusable")

	// ErrRegistryCorrupt: the registry does not parse and its backup does
	// not either. Nothing was changed; `withlock scope reset` moves it aside.
	ErrRegistryCorrupt error = registryFault("scope registry corrupt")

	// ErrRegistryBusy: flock on the registry was not granted within the
	// bound (a stopped process may hold it).
	ErrRegistryBusy error = registryFault("scope registry busy")
)

// registryFault is a sentinel that also matches ErrRegistryUnusable, so the
// command line needs one test for exit status 73.
type registryFault string

func (e registryFault) Error() string        { return string(e) }
func (e registryFault) Is(target error) bool { return target == ErrRegistryUnusable }

// scopeUsage is an ErrScopeUsage error with a message of its own (the
// sentinel's text would only repeat what the message says).
type scopeUsage string

func (e scopeUsage) Error() string        { return string(e) }
func (e scopeUsage) Is(target error) bool { return target == ErrScopeUsage }

func scopeUsagef(format string, args ...any) error {
	return scopeUsage(fmt.Sprintf(format, args...))
}

// unusable marks an OS or safety error on the registry as ErrRegistryUnusable.
func unusable(err error) error {
	if errors.Is(err, ErrRegistryUnusable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRegistryUnusable, err)
}

// ScopeCompetitor is a live holder that stands in the way of a request.
type ScopeCompetitor struct {
	Name string
	PID  int
	// Scopes are the competitor's allowed write scopes that overlap the
	// request.
	Scopes []string
}

func (c ScopeCompetitor) String() string {
	return fmt.Sprintf("%s (pid %d, %s)", c.Name, c.PID, strings.Join(c.Scopes, ", "))
}

// ScopeConflictError says why a registration was refused and names every
// competitor. It matches ErrScopeConflict.
type ScopeConflictError struct {
	Requested []string
	// Parent is set when the request is delegated and does not lie within
	// the parent's effective scope.
	Parent      *ScopeCompetitor
	Competitors []ScopeCompetitor
}

func (e *ScopeConflictError) Error() string {
	var why []string
	if e.Parent != nil {
		why = append(why, fmt.Sprintf("not within the effective scope of parent %s (pid %d)", e.Parent.Name, e.Parent.PID))
	}
	if len(e.Competitors) > 0 {
		held := make([]string, len(e.Competitors))
		for i, c := range e.Competitors {
			held[i] = c.String()
		}
		why = append(why, "held by "+strings.Join(held, "; "))
	}
	return fmt.Sprintf("scope conflict: %s: %s", strings.Join(e.Requested, ", "), strings.Join(why, "; "))
}

func (e *ScopeConflictError) Unwrap() error { return ErrScopeConflict }
