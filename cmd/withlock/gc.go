package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
)

func gcCommand() *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove old moved-aside locks (*.stale.*) and temp files (*.tmp.*)",
		Description: `Lock, guard and fence files are never touched, nor a temp file younger
than a minute. Exits 0, or 73 when the directory could not be read or a
removal failed. Details: withlock(1).

Examples:
   withlock gc
   withlock gc --older-than 24h --dry-run
   # weekly, from cron:
   @weekly withlock gc -q`,
		Flags: []cli.Flag{
			dirFlag(),
			&durFlag{Name: "older-than", Value: filelock.DefaultGCAge, Config: durOpts{days: true}, Usage: "remove only files older than `AGE` (days 7d, seconds, or a duration 36h)"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be removed, remove nothing"},
			&cli.BoolFlag{Name: "history", Usage: "also remove the run history (<key>.runs) of run ids that hold no lock and were idle longer than --older-than"},
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print nothing (errors still print)"},
		},
		Action: gcAction,
	}
}

func gcAction(_ context.Context, c *cli.Command) error {
	if c.NArg() > 0 {
		return usageError("gc: takes no arguments (got %q)", c.Args().Slice())
	}
	olderThan := c.Duration("older-than")
	locker, err := filelock.NewRunLocker(filelock.ResolveDir(c.String("dir"), os.Getenv), locks.DefaultTTL)
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	dry := c.Bool("dry-run")
	removed, err := locker.CollectGarbage(olderThan, dry)
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	if !c.Bool("quiet") {
		for _, l := range removed {
			fmt.Printf("%s %s (%s old)\n", verb, l, shortDuration(l.Age(time.Now()).Seconds()))
		}
	}
	if c.Bool("history") { // history.go
		err = errors.Join(err, collectHistory(locker.Dir, olderThan, dry, c.Bool("quiet")))
	}
	if err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("gc: %w", err))
	}
	return nil
}
