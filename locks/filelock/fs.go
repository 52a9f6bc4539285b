package filelock

import "github.com/withlock/withlock/internal/fsys"

// FS is the filesystem the run lock goes through (internal/fsys); tests
// set RunLocker.FS to a wrapper that injects faults.
type FS = fsys.FS
