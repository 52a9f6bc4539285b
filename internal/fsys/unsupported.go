//go:build !linux

package fsys

// withlock runs on Linux only (WSL included): its locks, process trees and
// signals are built on flock(2), /proc, pidfds and PR_SET_CHILD_SUBREAPER.
// On any other platform the build stops here, with this message. Every
// package of withlock imports this one, so this is the one place that says so.
var _ int = "withlock: unsupported platform: withlock runs on Linux only"
