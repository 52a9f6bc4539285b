// The runtime's GOMAXPROCS updater (Go 1.25+) is off. It is a goroutine
// started before main's packages initialise, and sysmon reads the cgroup's
// CPU limit files for it once a second, the first time within the first
// milliseconds. withlock lives for one command and sets GOMAXPROCS itself
// where it matters (run and scope pin their threads to one CPU with
// GOMAXPROCS 1, internal/cpupin, which also ends the updates); the updater
// cost ~0.15 ms of every start (interleaved, 400 runs each: 2.82 → 2.68 ms
// and 2.86 → 2.68 ms for `withlock run X -- true`). The child's runtime is
// its own: this setting is compiled into withlock, not put in the
// environment.

//go:debug updatemaxprocs=0

package main
