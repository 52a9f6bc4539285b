package locks

import "github.com/withlock/withlock/internal/fsys"

// FS is the filesystem the run lock goes through (internal/fsys); tests
// set RunLocker.FS to a wrapper that injects faults.
type FS = fsys.FS

// OSFS is the real filesystem. The name stays for the scope registry's
// files until they move to their own package and use internal/fsys.
type OSFS = fsys.OS
