package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/withlock/withlock/internal/testenv"
)

// TestMain lets the test binary double as the withlock command inside the
// scripts of testdata/script: testscript runs it under that name, and it
// runs main itself, so the scripts see exactly what the binary does.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"withlock": main})
}

// TestScripts runs the CLI behaviour scripts: each command's output, JSON
// shape and exit status, with real processes holding real locks in the
// script's own work directory.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("WITHLOCK_DIR", filepath.Join(env.WorkDir, "locks"))
			env.Setenv("WITHLOCK_SCOPE_FILE", filepath.Join(env.WorkDir, "locks", "scope.lock"))
			env.Setenv("WITHLOCK_TTL", "")
			env.Setenv("XDG_RUNTIME_DIR", "")
			env.Setenv("GORACE", testenv.GORACE())
			return nil
		},
		// [etcd]: this is the etcd-enabled build (-tags etcd), which shows
		// the etcd flags in its help. [file:PATH]: PATH exists.
		Condition: func(cond string) (bool, error) {
			if path, ok := strings.CutPrefix(cond, "file:"); ok {
				_, err := os.Stat(path)
				return err == nil, nil
			}
			if cond == "etcd" {
				return !execBackends["etcd"] && backends["etcd"] != nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile": cmdWaitFile,
			"wantexit": cmdWantExit,
		},
	})
}

// waitfile PATH [REGEXP] waits (up to 20s) until PATH exists and, with
// REGEXP, until its content matches: a background command touches a file
// once it holds its lock, or logs to one while it waits. It polls every
// 10ms against a deadline.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile PATH [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		re = regexp.MustCompile("(?m)" + args[1])
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, err := os.ReadFile(path)
		if err == nil && (re == nil || re.Match(data)) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear (or match %v) within 20s", args[0], re)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantexit N PROG [ARGS...] runs PROG and requires exit status N; stdout
// and stderr are kept for the next stdout/stderr checks.
func cmdWantExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: wantexit STATUS PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("wantexit: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("wantexit: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("exit status %d, want %d", got, want)
	}
}
