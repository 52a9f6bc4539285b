package supervisor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/internal/testenv"
	"github.com/withlock/withlock/supervisor"
)

// The test binary plays other roles when re-executed with roleEnv set:
// "supervise" is withlock in miniature (NotifyAsync, then Run, then write the
// result); with trapArg it is a child that records the signals it receives.
const roleEnv = "SUPERVISOR_TEST_ROLE"

func TestMain(m *testing.M) {
	// The trap role is chosen by argument: it runs under a supervise
	// helper and inherits that helper's environment.
	if len(os.Args) > 1 && os.Args[1] == trapArg {
		os.Exit(trapRole())
	}
	if os.Getenv(roleEnv) == "supervise" {
		os.Exit(superviseRole())
	}
	if role := os.Getenv(roleEnv); strings.HasPrefix(role, "mask-") {
		os.Exit(maskRole(role))
	}
	// Only here, in the tests' own process: the roles above keep what
	// their test gave them.
	testenv.UnignoreSignals()
	goleak.VerifyTestMain(m)
}

// trapArg as the first argument makes the test binary the trap role.
const trapArg = "supervisor-test-trap"

// helperResult is what the supervise role writes to HELPER_RESULT.
type helperResult struct {
	Status          int    `json:"status"`
	Reason          string `json:"reason"`
	Err             string `json:"err,omitempty"`
	ElapsedMS       int64  `json:"elapsed_ms"`
	Leftovers       int    `json:"leftovers"`        // our descendants (zombies too) once Run returned
	IgnoredAtStart  []int  `json:"ignored_at_start"` // forwarded signals ignored before subscribing
	ForegroundAfter bool   `json:"foreground_after"` // stdin's foreground group is ours again
}

// superviseRole reads its Config from the environment:
//
//	HELPER_ARGV (JSON), HELPER_GRACE, HELPER_TIMEOUT, HELPER_LOST_AFTER,
//	HELPER_KEEP_ORPHANS=1, HELPER_DIE_WITH_PARENT=1, HELPER_STDOUT (file), HELPER_RAISE (signal number
//	raised and queued before Run), HELPER_READY (file written once subscribed),
//	HELPER_VERIFY_FILE (Verify fails once it exists), HELPER_RESULT (file).
func superviseRole() int {
	var ignored []int
	for _, sig := range supervisor.Caught {
		if signal.Ignored(sig) {
			ignored = append(ignored, int(sig.(syscall.Signal)))
		}
	}
	sigs := supervisor.NotifyAsync()
	sigs.Wait()
	defer sigs.Stop()
	if os.Getenv("HELPER_DIE_WITH_PARENT") == "1" {
		if err := supervisor.DieWithParent(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 99
		}
	}
	if err := raiseAndQueue(sigs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 99
	}
	if f := os.Getenv("HELPER_READY"); f != "" {
		_ = os.WriteFile(f, []byte("ready"), 0o600)
	}
	cfg, err := helperConfig(sigs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 99
	}
	start := time.Now()
	res, runErr := supervisor.Run(context.Background(), cfg)
	out := helperResult{Status: res.Status, Reason: res.Reason.String(), ElapsedMS: time.Since(start).Milliseconds(), IgnoredAtStart: ignored}
	if runErr != nil {
		out.Err = runErr.Error()
	}
	left, _ := proc.Descendants(os.Getpid())
	out.Leftovers = len(left)
	if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil {
		out.ForegroundAfter = fg == unix.Getpgrp()
	}
	b, _ := json.Marshal(out)
	_ = os.WriteFile(os.Getenv("HELPER_RESULT"), b, 0o600)
	return res.Status
}

func helperConfig(sigs *supervisor.Signals) (supervisor.Config, error) {
	cfg := supervisor.Config{Signals: sigs, Grace: envDuration("HELPER_GRACE"), Timeout: envDuration("HELPER_TIMEOUT"),
		KeepOrphans: os.Getenv("HELPER_KEEP_ORPHANS") == "1"}
	if os.Getenv("HELPER_DEBUG") == "1" {
		cfg.Log = zerolog.New(os.Stderr).Level(zerolog.DebugLevel)
	}
	if err := json.Unmarshal([]byte(os.Getenv("HELPER_ARGV")), &cfg.Argv); err != nil {
		return cfg, fmt.Errorf("HELPER_ARGV: %w", err)
	}
	if path := os.Getenv("HELPER_STDOUT"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return cfg, err
		}
		cfg.Stdout = f
	}
	if path := os.Getenv("HELPER_VERIFY_FILE"); path != "" {
		// Verify fails once the file exists (the lock was broken) and
		// counts its calls in path+".calls".
		cfg.Verify = func() error {
			f, err := os.OpenFile(path+".calls", os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err == nil {
				fmt.Fprintln(f, "verify")
				f.Close()
			}
			if _, err := os.Stat(path); err == nil {
				return fmt.Errorf("lock broken (%s exists)", path)
			}
			return nil
		}
	}
	if d := envDuration("HELPER_LOST_AFTER"); d > 0 {
		lost := make(chan error, 1)
		time.AfterFunc(d, func() { lost <- fmt.Errorf("lock file gone") })
		cfg.Watch = func() <-chan error { return lost }
	}
	return cfg, nil
}

// raiseAndQueue sends HELPER_RAISE to ourselves and waits until it sits in
// the Signals queue, so that Run starts with a signal already pending.
func raiseAndQueue(sigs *supervisor.Signals) error {
	n := os.Getenv("HELPER_RAISE")
	if n == "" {
		return nil
	}
	var sig int
	if _, err := fmt.Sscan(n, &sig); err != nil {
		return fmt.Errorf("HELPER_RAISE: %w", err)
	}
	if err := unix.Kill(os.Getpid(), syscall.Signal(sig)); err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(sigs.C()) == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("signal %d never queued", sig)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

// trapRole records each forwarded signal as a line "<number>" in TRAP_FILE
// (after a first line "ready") and exits 3 on TERM or INT.
func trapRole() int {
	c := make(chan os.Signal, 16)
	signal.Notify(c, supervisor.Caught...)
	f, err := os.OpenFile(os.Getenv("TRAP_FILE"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 98
	}
	fmt.Fprintln(f, "ready")
	for sig := range c {
		fmt.Fprintln(f, int(sig.(syscall.Signal)))
		if sig == syscall.SIGTERM || sig == syscall.SIGINT {
			return 3
		}
	}
	return 0
}

// readLines returns the lines of path, or nil if it does not exist yet.
func readLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}
