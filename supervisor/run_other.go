//go:build !linux

package supervisor

import (
	"context"
	"fmt"
	"runtime"
)

// Run is unsupported on this platform.
func Run(ctx context.Context, cfg Config) (Result, error) {
	return Result{Status: StatusNotExecutable, Reason: SpawnFailed},
		fmt.Errorf("supervise %s on %s: %w", cfg.Argv[0], runtime.GOOS, ErrUnsupported)
}

// LookPath is unsupported on this platform.
func LookPath(name string, env []string) (string, error) {
	return "", fmt.Errorf("look up %s on %s: %w", name, runtime.GOOS, ErrUnsupported)
}

// DieWithParent is unsupported on this platform.
func DieWithParent() error {
	return fmt.Errorf("die with parent on %s: %w", runtime.GOOS, ErrUnsupported)
}

// StopSelf is unsupported on this platform.
func StopSelf() error {
	return fmt.Errorf("stop withlock on %s: %w", runtime.GOOS, ErrUnsupported)
}
