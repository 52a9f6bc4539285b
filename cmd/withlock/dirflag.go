package main

import (
	"slices"

	"github.com/urfave/cli/v3"
)

// lockFlags are where run locks live, for run, status and break: --dir,
// --backend and the etcd flags; then more, the command's own.
func lockFlags(more ...[]cli.Flag) []cli.Flag {
	return slices.Concat(append([]cli.Flag{dirFlag(), backendFlag()}, etcdFlags()...), slices.Concat(more...))
}

// dirFlag is every --dir flag (run, status, break, gc): where the lock
// directory is when the flag is not given (locks.ResolveDir).
func dirFlag() cli.Flag { return &cli.StringFlag{Name: "dir", Usage: dirUsage} }

const dirUsage = "lock directory (else $WITHLOCK_DIR, $NEXUSCORE_RUN_LOCK_DIR, /run/withlock for root, /tmp/withlock-UID for others)"

// scopeFileFlag is every --scope-file flag (scope, status, break): the
// registry is in the run lock's default dir, not the one --dir or
// $WITHLOCK_DIR names (scope.FilePath).
func scopeFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "scope-file", Usage: "scope registry (else $WITHLOCK_SCOPE_FILE, /run/withlock/scope.lock for root, /tmp/withlock-UID/scope.lock for others)"}
}
