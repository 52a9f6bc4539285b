//go:build !urfave_cli_no_docs

package main

// The man page generator needs urfave/cli's docs support, which links
// blackfriday and costs every start-up ~0.5 ms of regexp compilation. The
// release build (make build: -tags urfave_cli_no_docs) leaves it out;
// `make man` builds without the tag.

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

func init() { commandRegistry = append(commandRegistry, genManCommand) }

// genManCommand prints the man page; `make man` runs it. Hidden: it is a
// build step, not something a user calls.
func genManCommand() *cli.Command {
	return &cli.Command{
		Name:   "gen-man",
		Usage:  "print the withlock(1) man page (roff)",
		Hidden: true,
		Action: func(c *cli.Context) error {
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return exitWith(exitCantCreate, err)
			}
			fmt.Print(page)
			return nil
		},
	}
}
