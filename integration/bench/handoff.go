//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// handoff: how soon a waiter gets the lock once the holder's child ends.
func init() {
	register(section{
		order: 20,
		name:  "handoff",
		title: "hand-off: holder's child ends → waiter's child starts",
		unit:  "ms",
		note: "timestamps (date +%s%N) written by the holder's child just before it exits and by the waiter's child " +
			"as it starts; both sides pay one exec of date(1); go-floor waits without a bound (blocking flock)",
		runs: func(b *bench) int { return b.handoffRuns },
		prepare: func(b *bench) ([]*tool, func(), error) {
			dir := b.dir("handoff")
			lockFile := filepath.Join(dir, "flock.lock")
			wl := b.withlockTool("withlock run --wait 10s (holder and waiter)", func(int) (float64, error) {
				return b.handoff(
					[]string{b.withlock, "run", "--dir", dir, "ho", "--"},
					[]string{b.withlock, "run", "--dir", dir, "--wait", "10s", "ho", "--"},
				)
			})
			fl := peer("flock", "flock F (holder), flock -w 10 F (waiter)", func(path string) func(int) (float64, error) {
				return func(int) (float64, error) {
					return b.handoff([]string{path, lockFile}, []string{path, "-w", "10", lockFile})
				}
			})
			goFloorLock := filepath.Join(dir, "gofloor.lock")
			gf := b.goFloorTool("gofloor F (holder and waiter)", func(int) (float64, error) {
				return b.handoff([]string{b.goFloor, goFloorLock}, []string{b.goFloor, goFloorLock})
			})
			baseDir := b.dir("handoff-baseline")
			base := b.baselineTools("withlock (an earlier build) run --wait 10s", func(path string) func(int) (float64, error) {
				return func(int) (float64, error) {
					return b.handoff(
						[]string{path, "run", "--dir", baseDir, "ho", "--"},
						[]string{path, "run", "--dir", baseDir, "--wait", "10s", "ho", "--"},
					)
				}
			})
			return append([]*tool{wl, fl, gf}, base...), func() {}, nil
		},
	})
}

// handoff runs one hand-off between a holder (holderPrefix + a shell that
// says ready, waits for a line on stdin, then prints a timestamp and exits)
// and a waiter (waiterPrefix + date), both given as "lock command --" prefixes.
// It returns the waiter's timestamp minus the holder's, in ms.
func (b *bench) handoff(holderPrefix, waiterPrefix []string) (float64, error) {
	date, err := exec.LookPath("date")
	if err != nil {
		return 0, err
	}
	hIn, hInW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer hInW.Close()
	hOut, hOutW, err := os.Pipe()
	if err != nil {
		hIn.Close()
		return 0, err
	}
	defer hOut.Close()
	holderArgv := append(append([]string{}, holderPrefix...), "sh", "-c", "echo ready; read line; exec "+date+" +%s%N")
	started := time.Now()
	hp, hErr, err := b.spawn(holderArgv, spawnOpts{stdin: hIn, stdout: hOutW})
	hIn.Close()
	hOutW.Close()
	if err != nil {
		return 0, err
	}
	holderOut := bufio.NewReader(hOut)
	if line, err := holderOut.ReadString('\n'); err != nil || line != "ready\n" {
		hInW.Close()
		o, _ := finish(hp, hErr, started)
		return 0, fmt.Errorf("holder not ready (%q, %v): exit %d: %s", line, err, o.status, o.stderr)
	}

	wOut, wOutW, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer wOut.Close()
	waiterStarted := time.Now()
	wp, wErr, err := b.spawn(append(append([]string{}, waiterPrefix...), date, "+%s%N"), spawnOpts{stdout: wOutW})
	wOutW.Close()
	if err != nil {
		return 0, err
	}
	time.Sleep(b.settle) // let the waiter find the lock held and start waiting

	if _, err := hInW.WriteString("\n"); err != nil {
		return 0, fmt.Errorf("release holder: %w", err)
	}
	t0, err0 := readStamp(holderOut)
	t1, err1 := readStamp(bufio.NewReader(wOut))
	ho, errH := finish(hp, hErr, started)
	wo, errW := finish(wp, wErr, waiterStarted)
	switch {
	case errH != nil || errW != nil:
		return 0, fmt.Errorf("wait: %v %v", errH, errW)
	case ho.status != 0:
		return 0, fmt.Errorf("holder exited %d: %s", ho.status, ho.stderr)
	case wo.status != 0:
		return 0, fmt.Errorf("waiter exited %d: %s", wo.status, wo.stderr)
	case err0 != nil || err1 != nil:
		return 0, fmt.Errorf("timestamps: %v %v", err0, err1)
	}
	return float64(t1-t0) / 1e6, nil
}

// readStamp reads one `date +%s%N` line.
func readStamp(r *bufio.Reader) (int64, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("read timestamp: %w (got %q)", err, line)
	}
	return strconv.ParseInt(strings.TrimSpace(line), 10, 64)
}
