package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks/filelock"
)

// metricsBinaryName is the binary that writes the metrics: the Prometheus
// client stays out of withlock, whose every run would pay for its start-up.
const metricsBinaryName = "withlock-metrics"

func metricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print the Prometheus text format of every run id's history",
		Description: `Prints, for every run id with a history in the lock directory,
withlock_last_start_timestamp_seconds, withlock_last_end_timestamp_seconds,
withlock_last_success_timestamp_seconds, withlock_last_duration_seconds,
withlock_last_exit_code, withlock_runs_total{result}, withlock_conflicts_total
and withlock_held{holder_alive}, each labelled run_id. With --textfile the
output goes to PATH atomically (temp file + rename), for node_exporter's
textfile collector. Runs withlock-metrics, found beside withlock or in PATH.

Examples:
   withlock metrics
   */5 * * * * withlock metrics --textfile /var/lib/node_exporter/textfile_collector/withlock.prom`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: dirUsage},
			&cli.StringFlag{Name: "textfile", Usage: "write to `PATH` atomically instead of stdout"},
		},
		Action: metricsAction,
	}
}

// metricsAction execs withlock-metrics with the resolved dir.
func metricsAction(_ context.Context, c *cli.Command) error {
	if c.NArg() > 0 {
		return usageError("metrics: takes no arguments (got %q)", c.Args().Slice())
	}
	args := []string{"--dir", filelock.ResolveDir(c.String("dir"), os.Getenv)}
	if c.String("textfile") != "" {
		args = append(args, "--textfile", c.String("textfile"))
	}
	return execHelper(metricsBinaryName, "go build -o withlock-metrics ./cmd/withlock-metrics", args, nil)
}

// execHelper replaces this process with the helper binary name (withlock-etcd,
// withlock-metrics), found beside this executable or else in PATH, running
// args with our environment plus what env(path) adds. It returns only on
// failure, with an error that exits 73; build is how to build a missing one.
func execHelper(name, build string, args []string, env func(path string) []string) error {
	path, beside := "", ""
	if exe, err := os.Executable(); err == nil {
		beside = filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			path = beside
		}
	}
	if p, err := exec.LookPath(name); path == "" && err == nil {
		path, _ = filepath.Abs(p)
	}
	if path == "" {
		where := "in PATH"
		if beside != "" {
			where = "at " + beside + " or in PATH"
		}
		return exitWith(exitCantCreate, fmt.Errorf("%s is not installed %s (build it with: %s)", name, where, build))
	}
	var extra []string
	if env != nil {
		extra = env(path)
	}
	// Exec resets caught signals to their default, so a HUP or INT that
	// withlock inherited as ignored (nohup), and that the supervisor
	// subscribed to, would reach the helper as default; Reset puts the
	// inherited ignore back. (For other signals Go does not keep an
	// inherited ignore even in a direct run, so the helper sees what
	// withlock saw.)
	signal.Reset()
	err := syscall.Exec(path, append([]string{path}, args...), childEnv(os.Environ(), extra))
	return exitWith(exitCantCreate, fmt.Errorf("exec %s: %w", path, err))
}
