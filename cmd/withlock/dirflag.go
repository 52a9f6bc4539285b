package main

// dirUsage is the help of every --dir flag (run, status, break, gc): where
// the lock directory is when the flag is not given (locks.ResolveDir).
const dirUsage = "lock directory (else $WITHLOCK_DIR, $NEXUSCORE_RUN_LOCK_DIR, /run/withlock for root, /tmp/withlock-UID for others)"

// scopeFileUsage is the help of every --scope-file flag: the registry is in
// the run lock's default dir, not the one --dir or $WITHLOCK_DIR names
// (scope.FilePath).
const scopeFileUsage = "scope registry (else $WITHLOCK_SCOPE_FILE, /run/withlock/scope.lock for root, /tmp/withlock-UID/scope.lock for others)"
