package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
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
	path, err := findHelperBinary(metricsBinaryName)
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	argv := []string{path, "--dir", locks.ResolveDir(c.String("dir"), os.Getenv)}
	if c.String("textfile") != "" {
		argv = append(argv, "--textfile", c.String("textfile"))
	}
	err = syscall.Exec(path, argv, os.Environ())
	return exitWith(exitCantCreate, fmt.Errorf("metrics: exec %s: %w", path, err))
}

// findHelperBinary looks for name beside the running executable, then in
// PATH (as findEtcdBinary does for withlock-etcd).
func findHelperBinary(name string) (string, error) {
	if exe, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	return "", fmt.Errorf("%s is not installed beside withlock or in PATH (build it with: go build -o %s ./cmd/%s)", name, name, name)
}
