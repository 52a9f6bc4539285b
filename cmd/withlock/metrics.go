package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
)

// metricsBinaryName is the binary that writes the metrics: the Prometheus
// client stays out of withlock, whose every run would pay for its start-up.
const metricsBinaryName = "withlock-metrics"

func metricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print the Prometheus text format of every run id's history",
		Description: `Prints, for every run id in the lock directory (or in etcd, with
--backend etcd), withlock_last_start_timestamp_seconds,
withlock_last_end_timestamp_seconds, withlock_last_success_timestamp_seconds,
withlock_last_duration_seconds, withlock_last_exit_code,
withlock_runs_total{result}, withlock_conflicts_total and
withlock_held{holder_alive}, each labelled run_id: the report of status
--json, turned into metrics by withlock-metrics (found beside withlock or in
PATH). With --textfile the output goes to PATH atomically (temp file +
rename), for node_exporter's textfile collector.

Examples:
   withlock metrics
   */5 * * * * withlock metrics --textfile /var/lib/node_exporter/textfile_collector/withlock.prom`,
		Flags: lockFlags([]cli.Flag{
			&cli.StringFlag{Name: "textfile", Usage: "write to `PATH` atomically instead of stdout"},
		}),
		Action: metricsAction,
	}
}

// metricsAction hands the report `status --json` prints, of every run id
// on the backend, to withlock-metrics on its stdin; withlock-metrics's
// exit status is withlock's.
func metricsAction(_ context.Context, c *cli.Command) error {
	if c.NArg() > 0 {
		return usageError("metrics: takes no arguments (got %q)", c.Args().Slice())
	}
	path, err := findHelper(metricsBinaryName, "go build -o withlock-metrics ./cmd/withlock-metrics")
	if err != nil {
		return err
	}
	st, err := backendReport(c)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(st)
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	cmd := exec.Command(path, "--textfile", c.String("textfile")) // "": stdout
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(doc), os.Stdout, os.Stderr
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			return silentExit(128 + int(ws.Signal()))
		}
		return silentExit(ee.ExitCode())
	} else if err != nil {
		return exitWith(exitCantCreate, err)
	}
	return nil
}

// backendReport is the report of `status --json` for every run id on c's
// backend, without the scope registry (the default build hands --backend
// etcd over to withlock-etcd, which builds it).
func backendReport(c *cli.Command) (*statusReport, error) {
	if c.String("backend") == "etcd" {
		st, _, err := etcdReport(c, nil)
		return st, err
	}
	locker, err := filelock.NewRunLocker(filelock.ResolveDir(c.String("dir"), os.Getenv), locks.DefaultTTL)
	if err != nil {
		return nil, exitWith(exitCantCreate, err)
	}
	return gatherStatus(locker, nil, ""), nil
}

// findHelper is the helper binary name (withlock-etcd, withlock-metrics)
// beside this executable, or else in PATH; when there is none, an error
// that exits 73 names where it looked and build, how to build it.
func findHelper(name, build string) (string, error) {
	beside := ""
	if exe, err := os.Executable(); err == nil {
		beside = filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Abs(p)
	}
	where := "in PATH"
	if beside != "" {
		where = "at " + beside + " or in PATH"
	}
	return "", exitWith(exitCantCreate, fmt.Errorf("%s is not installed %s (build it with: %s)", name, where, build))
}
