package main

import (
	"context"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
)

// checkDescriptors is every command's Before (SPEC §3, scarce resources):
// with too few open files allowed, run and scope end with 73 and one line
// before any lock is taken or command started — never a Go runtime crash
// ("netpollinit failed" under ulimit -n 6) or a lock that cannot be
// released (ulimit -n 9) — and otherwise set aside the descriptors a
// release needs, handed back by freeReserve when it runs out. The other
// commands only check that the few descriptors they need are there, for
// the same one line instead of the runtime's abort. Parsing the command
// line opens no descriptor.
func checkDescriptors(ctx context.Context, c *cli.Command) (context.Context, error) {
	check := locks.CheckDescriptors
	if c.Name == "run" || c.Name == "scope" {
		check = locks.ReserveDescriptors
	}
	if err := check(); err != nil {
		return ctx, exitWith(exitCantCreate, err)
	}
	return ctx, nil
}
