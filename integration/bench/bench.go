//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// bench is what sections share: the withlock binary, a scratch directory,
// the run counts from the flags, and helpers to start processes.
type bench struct {
	withlock        string // path of the binary under test (the installed copy); "" when unavailable
	withlockAsFound string // the binary as go build left it, or as -bin named it
	withlockGiven   bool   // withlockAsFound is -bin's, not the bench's build
	withlockMissing string // why it is unavailable
	goFloor         string // path of the go-floor peer (./gofloor); "" when its build failed
	baseline        string // -baseline's build, installed: an earlier withlock measured beside this one; "" without
	baselineMissing string // why -baseline's binary is unavailable
	goFloorMissing  string // why it is unavailable
	tmp             string // scratch directory, removed at the end
	env             []string

	n, handoffRuns, throughputRounds, workers, perWorker, waitRuns, memRuns int
	queuedWaiters, drainWaiters, drainRounds, statusRuns, scopeRuns         int
	wait, settle                                                            time.Duration
}

// withlockTool returns a withlock tool, or a missing one when the binary is unavailable.
func (b *bench) withlockTool(command string, measure func(i int) (float64, error)) *tool {
	return &tool{name: "withlock", command: command, missing: b.withlockMissing, measure: measure}
}

// baselineName is the baseline build's tool name (-baseline).
const baselineName = "withlock (baseline)"

// baselineTools is the baseline build's tool in a section that measures
// one (overhead, handoff), none without -baseline: measure gets its path.
func (b *bench) baselineTools(command string, measure func(path string) func(i int) (float64, error)) []*tool {
	if b.baseline == "" && b.baselineMissing == "" {
		return nil
	}
	t := &tool{name: baselineName, command: command, missing: b.baselineMissing}
	if b.baseline != "" {
		t.measure = measure(b.baseline)
	}
	return []*tool{t}
}

// goFloorTool returns the go-floor tool, or a missing one when its build failed.
func (b *bench) goFloorTool(command string, measure func(i int) (float64, error)) *tool {
	return &tool{name: "go-floor", command: command, missing: b.goFloorMissing, measure: measure}
}

// goFloorSignalsName is go-floor run with -signals: the floor of a Go
// wrapper that handles every catchable signal (SPEC §5).
const goFloorSignalsName = "go-floor -signals"

// goFloorSignalsTool returns the go-floor -signals tool, or a missing one
// when go-floor's build failed.
func (b *bench) goFloorSignalsTool(command string, measure func(i int) (float64, error)) *tool {
	return &tool{name: goFloorSignalsName, command: command, missing: b.goFloorMissing, measure: measure}
}

// peer returns a tool for an executable on PATH, "n/a (not installed)" when absent.
// The measure function gets the executable's absolute path.
func peer(name, command string, measure func(path string) func(i int) (float64, error)) *tool {
	path, err := exec.LookPath(name)
	if err != nil {
		return &tool{name: name, command: command, missing: "n/a (not installed)"}
	}
	return &tool{name: name, command: command, measure: measure(path)}
}

// dir returns a fresh 0700 directory under the scratch directory.
func (b *bench) dir(name string) string {
	d, err := os.MkdirTemp(b.tmp, name+"-")
	if err != nil {
		panic(err) // the scratch dir is ours; failing here means the disk is gone
	}
	return d
}

// outcome is how one process ended.
type outcome struct {
	wall   time.Duration
	status int // exit code, or 128+N when killed by signal N
	usage  *syscall.Rusage
	stderr string
}

// cpu is user+system CPU time of the process and the descendants it waited for.
func (o outcome) cpu() time.Duration {
	return time.Duration(o.usage.Utime.Nano() + o.usage.Stime.Nano())
}

// maxRSSKiB is the peak resident set of the process or of one of the
// descendants it waited for (Linux reports KiB).
func (o outcome) maxRSSKiB() int64 { return o.usage.Maxrss }

// spawnOpts are optional standard streams for spawn, and whether the
// process leads its own process group.
type spawnOpts struct {
	stdin, stdout *os.File
	ownGroup      bool
}

// spawn starts argv (argv[0] an absolute path) with the bench environment.
// Its stderr goes to a file so a failure can say what the process said.
func (b *bench) spawn(argv []string, o spawnOpts) (*os.Process, *os.File, error) {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, err
	}
	defer devnull.Close()
	stderr, err := os.CreateTemp(b.tmp, "stderr-")
	if err != nil {
		return nil, nil, err
	}
	os.Remove(stderr.Name()) // still readable through the open file
	files := []*os.File{devnull, devnull, stderr}
	if o.stdin != nil {
		files[0] = o.stdin
	}
	if o.stdout != nil {
		files[1] = o.stdout
	}
	attr := &os.ProcAttr{Env: b.env, Files: files}
	if o.ownGroup {
		attr.Sys = &syscall.SysProcAttr{Setpgid: true}
	}
	p, err := os.StartProcess(argv[0], argv, attr)
	if err != nil {
		stderr.Close()
		return nil, nil, err
	}
	return p, stderr, nil
}

// finish waits for p and collects how it ended.
func finish(p *os.Process, stderr *os.File, started time.Time) (outcome, error) {
	defer stderr.Close()
	state, err := p.Wait()
	wall := time.Since(started)
	if err != nil {
		return outcome{}, err
	}
	o := outcome{wall: wall, status: state.ExitCode(), usage: state.SysUsage().(*syscall.Rusage)}
	if ws := state.Sys().(syscall.WaitStatus); ws.Signaled() {
		o.status = 128 + int(ws.Signal())
	}
	if o.status != 0 {
		o.stderr = tail(stderr)
	}
	return o, nil
}

// tail returns the last 2 KiB the process wrote to f, trimmed.
func tail(f *os.File) string {
	if info, err := f.Stat(); err == nil && info.Size() > 2048 {
		_, _ = f.Seek(info.Size()-2048, io.SeekStart)
	} else {
		_, _ = f.Seek(0, io.SeekStart)
	}
	data, _ := io.ReadAll(f)
	return strings.TrimSpace(string(data))
}

// run runs argv to completion; wall time covers fork, exec and wait.
func (b *bench) run(argv []string, o spawnOpts) (outcome, error) {
	started := time.Now()
	p, stderr, err := b.spawn(argv, o)
	if err != nil {
		return outcome{}, err
	}
	return finish(p, stderr, started)
}

// runExpect runs argv and fails unless it exits with want.
func (b *bench) runExpect(want int, argv ...string) (outcome, error) {
	o, err := b.run(argv, spawnOpts{})
	if err != nil {
		return o, err
	}
	if o.status != want {
		return o, fmt.Errorf("%s exited %d, want %d: %s", strings.Join(argv, " "), o.status, want, o.stderr)
	}
	return o, nil
}

// wallOf measures the wall time of argv exiting with want, in ms.
func (b *bench) wallOf(want int, argv ...string) func(i int) (float64, error) {
	return func(int) (float64, error) {
		o, err := b.runExpect(want, argv...)
		return ms(o.wall), err
	}
}

// holder is a background process holding a lock until stop.
type holder struct {
	p      *os.Process
	stderr *os.File
}

// startHolder starts argv in its own process group and returns once the
// process prints "ready" on stdout (it holds the lock by then).
func (b *bench) startHolder(argv []string) (*holder, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	p, stderr, err := b.spawn(argv, spawnOpts{stdout: w, ownGroup: true})
	w.Close()
	if err != nil {
		return nil, err
	}
	h := &holder{p: p, stderr: stderr}
	line := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := r.Read(buf)
		line <- string(buf[:n])
	}()
	select {
	case got := <-line:
		if strings.TrimSpace(got) == "ready" {
			return h, nil
		}
		h.stop()
		return nil, fmt.Errorf("%s: holder said %q, not ready", strings.Join(argv, " "), got)
	case <-time.After(10 * time.Second):
		h.stop()
		return nil, fmt.Errorf("%s: holder not ready after 10s", strings.Join(argv, " "))
	}
}

// stop ends the holder's process group: TERM (withlock tears its child
// down; flock dies with its child), then KILL, then waits. The pipe reader
// goroutine ends when the holder's stdout closes.
func (h *holder) stop() {
	_ = syscall.Kill(-h.p.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		_, _ = h.p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-h.p.Pid, syscall.SIGKILL)
		<-done
	}
	h.stderr.Close()
}
