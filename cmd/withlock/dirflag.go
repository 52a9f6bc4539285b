package main

// dirUsage is the help of every --dir flag (run, status, break, gc): where
// the lock directory is when the flag is not given (locks.ResolveDir).
const dirUsage = "lock directory (else $WITHLOCK_DIR, $NEXUSCORE_RUN_LOCK_DIR, /run/withlock for root, /tmp/withlock-UID for others)"
