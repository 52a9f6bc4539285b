package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks/scope"
	"github.com/withlock/withlock/supervisor"
)

func scopeCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "name", Usage: "allocation name, unique among live holders (default: 6 random hex digits)"},
		&cli.StringSliceFlag{Name: "allow", Usage: "scope `PATH:read|write[:recursive]` to hold (repeatable)"},
		&cli.StringFlag{Name: "delegate-from", Sources: cli.EnvVars("WITHLOCK_SCOPE_NAME"), Usage: "take the scope from this live allocation's (default: the scoped withlock this runs under)"},
		&cli.StringFlag{Name: "socket", Usage: "socket `PATH` recorded with the allocation"},
		scopeFileFlag(),
	}
	return &cli.Command{
		Name:      "scope",
		Usage:     "hold path scopes in your per-user registry while COMMAND runs",
		ArgsUsage: "[--] COMMAND [ARGS...]",
		Description: `Registers the --allow scopes while COMMAND runs; refuses (75, naming every
competitor) a write scope that overlaps another live holder's. Nested in a
scoped command it delegates from it ($WITHLOCK_SCOPE_NAME). Exit 64 for a
malformed scope, an unknown parent or a duplicate name; 73 when the registry
is unusable (corrupt: see "withlock break --scopes"). Details: withlock(1).

Examples:
   withlock scope --allow /project/src:write:recursive -- make
   withlock scope --allow /project/src/core:write:recursive -- tool   (inside the first: delegated)
   withlock status --scopes`,
		Flags:        slices.Concat(flags, superviseFlags(), logFlags()),
		Action:       scopeAction,
		StopOnNthArg: new(1), // its first word that is not a flag starts COMMAND (SPEC §1)
	}
}

func scopeAction(ctx context.Context, c *cli.Command) error {
	log := newLogger(c, os.Stderr)
	// Subscribed before a wait blocks and before the spawn: a signal
	// during a wait or the spawn is queued.
	sigs := supervisor.NotifyAsync() // see main.go

	argv := childArgv(ctx, c, 0)
	if len(argv) == 0 {
		return usageError("scope: missing COMMAND (usage: withlock scope --allow SCOPE [flags] -- COMMAND [ARGS...])")
	}
	// Each --allow scope's path is taken as the kernel would reach it (a
	// relative one from the working directory, symlinks before "..") and
	// stored in that form.
	texts := c.StringSlice("allow")
	if len(texts) == 0 {
		return usageError("scope: no --allow PATH:read|write[:recursive] given")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("scope: working directory: %w", err))
	}
	req := scope.Request{Name: c.String("name"), DelegateFrom: c.String("delegate-from"), Socket: c.String("socket")}
	for _, text := range texts {
		spec, err := scope.ResolveSpec(text, cwd)
		if err != nil {
			return usageError("scope: %v", err)
		}
		req.Allow = append(req.Allow, spec)
	}
	path, err := filepath.Abs(scope.FilePath(c.String("scope-file"), os.Getenv))
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	be := scopeBackend{file: &scope.Registry{Path: path, Log: log}, req: req, beforeWait: sigs.Wait}
	// The run's events (acquired, released) are run's alone: scope's log nowhere.
	events := &runEvents{log: zerolog.Nop()}
	return superviseUnderLock(c, log, sigs, events, be, c.String("name"), argv, func() {})
}

// scopeBackend registers in the scope registry through the run lock's
// backend seam, so the wait is the same signal-abortable one.
type scopeBackend struct {
	file *scope.Registry // its Log is the holder's too
	req  scope.Request
	// beforeWait is called before each pause (required): the signal subscription
	// must be in place before a wait blocks (supervisor.NotifyAsync).
	beforeWait func()
}

// Acquire registers; a conflict or a busy registry is retried until wait
// runs out (wait < 0: forever), sleeping between tries.
func (b scopeBackend) Acquire(ctx context.Context, _ string, wait time.Duration) (heldLock, error) {
	deadline := time.Now().Add(wait)
	for pause := 50 * time.Millisecond; ; pause = min(pause*2, time.Second) {
		alloc, err := b.file.Register(ctx, b.req)
		left := time.Until(deadline)
		switch {
		case err == nil:
			return &scopeHold{file: b.file, alloc: alloc}, nil
		case ctx.Err() != nil:
			return nil, context.Cause(ctx)
		case !errors.Is(err, scope.ErrConflict) && !errors.Is(err, scope.ErrBusy), wait >= 0 && left <= 0:
			return nil, err // not worth a retry, or the wait ran out
		}
		b.beforeWait()
		sleep := pause/2 + rand.N(pause/2+1) // jittered, doubling up to a second
		if wait >= 0 {
			sleep = min(sleep, left)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(sleep):
		}
	}
}

// scopeHold is a registered allocation. Nothing expires, but the
// allocation can vanish from the registry (an operator's edit, a reset,
// another writer's mistake): its heartbeat puts it back, or reports the
// scope lost.
type scopeHold struct {
	file  *scope.Registry
	alloc scope.Allocation
}

// scopeCheckEvery is how often a holder checks that its allocation is
// still in the registry: SPEC §4 asks for at least every 5 s. While the
// registry file is unchanged a check is one lstat.
const scopeCheckEvery = 2 * time.Second

// Heartbeat checks the allocation every scopeCheckEvery (Registry.Keep):
// one that went missing is put back when that conflicts with no one, and
// is lost — reported once on the channel, handled like a lost run lock
// (--on-lock-lost) — when it cannot be. A registry that cannot be read is
// logged and checked again: while it is unreadable it admits no one.
func (h *scopeHold) Heartbeat() (<-chan error, func()) {
	lost := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var checker sync.WaitGroup
	alloc := h.alloc // the goroutine's own: Keep updates it
	checker.Go(func() {
		tick := time.NewTicker(scopeCheckEvery)
		defer tick.Stop()
		var stamp scope.Stamp
		var failing string // the last error logged: a registry that stays unreadable is logged once
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			next, restored, err := h.file.Keep(ctx, &alloc, stamp)
			switch {
			case errors.Is(err, scope.ErrLost):
				lost <- fmt.Errorf("scope %s: %w", h.alloc.Name, err)
				return
			case err != nil:
				if ctx.Err() == nil && err.Error() != failing {
					h.file.Log.Warn().Str("event", "scope_check_failed").Str("name", h.alloc.Name).Msg(err.Error())
				}
				failing = err.Error()
				continue
			case restored:
				h.file.Log.Warn().Str("event", "scope_restored").Str("name", h.alloc.Name).Str("registry", h.file.Path).
					Msg("scope allocation was missing from the registry: put back")
			}
			stamp, failing = next, ""
		}
	})
	return lost, func() { cancel(); checker.Wait() }
}

func (h *scopeHold) Env() []string {
	return []string{"WITHLOCK_SCOPE_NAME=" + h.alloc.Name, "WITHLOCK_SCOPE_FILE=" + h.file.Path}
}

// Name is the allocation's name, for logs.
func (h *scopeHold) Name() string { return h.alloc.Name }

func (h *scopeHold) Release() error {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	return h.file.Release(ctx, h.alloc.Name, h.alloc.PID)
}
