package scope

import (
	"errors"
	"fmt"
	"strings"
)

// The scope registry's sentinel errors. Callers match them with errors.Is;
// the command line maps them to exit statuses (SPEC §2): ErrConflict
// → 75, ErrUsage → 64, ErrUnusable (which ErrCorrupt
// and ErrBusy also match) → 73.
var (
	// ErrConflict: a requested write scope overlaps another live
	// holder's effective write scope, or a delegated request does not lie
	// within its parent's. Returned as a *ConflictError.
	ErrConflict = errors.New("scope conflict")

	// ErrUsage: the request itself is wrong — malformed scope, unknown
	// parent, duplicate live name, bad name.
	ErrUsage = errors.New("scope usage")

	// ErrUnusable: the registry could not be read or written (unsafe
	// place, OS error, corrupt, lock not granted in time).
	ErrUnusable = errors.New("scope registry unusable")

	// ErrCorrupt: the registry does not parse and its backup does
	// not either. Nothing was changed; `withlock break --scopes` moves it aside.
	ErrCorrupt error = kindError{"scope registry corrupt", ErrUnusable}

	// ErrBusy: flock on the registry was not granted within the
	// bound (a stopped process may hold it).
	ErrBusy error = kindError{"scope registry busy", ErrUnusable}

	// ErrLost: a holder's allocation went missing from the registry (an
	// operator's edit, a reset, another writer's mistake) and cannot be put
	// back, because that would now conflict with another live holder.
	ErrLost = errors.New("scope allocation lost")
)

// kindError is an error with a message of its own that matches the
// sentinel kind: ErrCorrupt and ErrBusy are ErrUnusable too, so the command
// line needs one test for exit status 73, and a usage error says what is
// wrong without repeating "scope usage".
type kindError struct {
	msg  string
	kind error
}

func (e kindError) Error() string        { return e.msg }
func (e kindError) Is(target error) bool { return target == e.kind }

func usagef(format string, args ...any) error {
	return kindError{fmt.Sprintf(format, args...), ErrUsage}
}

// unusable marks an OS or safety error on the registry as ErrUnusable.
func unusable(err error) error {
	if errors.Is(err, ErrUnusable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnusable, err)
}

// Competitor is a live holder that stands in the way of a request.
type Competitor struct {
	Name string
	PID  int
	// Scopes are the competitor's allowed write scopes that overlap the
	// request.
	Scopes []string
}

// ConflictError says why a registration was refused and names every
// competitor. It matches ErrConflict.
type ConflictError struct {
	Requested []string
	// Parent is set when the request is delegated and does not lie within
	// the parent's effective scope.
	Parent      *Competitor
	Competitors []Competitor
}

func (e *ConflictError) Error() string {
	var why []string
	if e.Parent != nil {
		why = append(why, fmt.Sprintf("not within the effective scope of parent %s (pid %d)", e.Parent.Name, e.Parent.PID))
	}
	if len(e.Competitors) > 0 {
		held := make([]string, len(e.Competitors))
		for i, c := range e.Competitors {
			held[i] = fmt.Sprintf("%s (pid %d, %s)", c.Name, c.PID, strings.Join(c.Scopes, ", "))
		}
		why = append(why, "held by "+strings.Join(held, "; "))
	}
	return fmt.Sprintf("scope conflict: %s: %s", strings.Join(e.Requested, ", "), strings.Join(why, "; "))
}

func (e *ConflictError) Unwrap() error { return ErrConflict }
