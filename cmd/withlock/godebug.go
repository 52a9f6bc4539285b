// The runtime's GOMAXPROCS updater (Go 1.25+) is off. It is a goroutine
// started before main's packages initialise, and sysmon reads the cgroup's
// CPU limit files for it once a second, the first time within the first
// milliseconds. withlock lives for one command and sets GOMAXPROCS itself
// (1 at the start of its package inits, internal/oneproc; back to the
// runtime's choice for the commands that do not pin to one CPU, which any
// explicit setting would also stop the updates for); the updater
// cost ~0.15 ms of every start (interleaved, 400 runs each: 2.82 → 2.68 ms
// and 2.86 → 2.68 ms for `withlock run X -- true`). The child's runtime is
// its own: this setting is compiled into withlock, not put in the
// environment.

//go:debug updatemaxprocs=0

package main
