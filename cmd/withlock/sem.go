package main

import "github.com/urfave/cli/v3"

// semFlags are run's flags for semaphores and shared locks (SPEC §6).
func semFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max", Usage: "a counting semaphore: up to `N` holders of RUN_ID at once, each told its WITHLOCK_SLOT (0…N-1)"},
		&cli.BoolFlag{Name: "shared", Usage: "hold RUN_ID shared, as flock -s: shared holders run together; a plain (exclusive) run of RUN_ID waits for them and keeps new ones out"},
	}
}

// checkSlotFlags refuses --max and --shared where they cannot work (exit 64).
func checkSlotFlags(c *cli.Command) error {
	switch {
	case c.IsSet("max") && c.Bool("shared"):
		return usageError("run: --max and --shared exclude each other")
	case c.IsSet("max") && c.Int("max") < 1:
		return usageError("run: --max %d: must be at least 1", c.Int("max"))
	}
	return nil
}
