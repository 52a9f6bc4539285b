// Package integration holds black-box tests of the built withlock binary:
// real processes, real signals, real lock files in t.TempDir().
//
// TestMain builds ./cmd/withlock once (with the same -race and -tags as this
// test binary) and the helpers in harness_test.go run it. Set
// WITHLOCK_TEST_BIN=/path/to/withlock to test a prebuilt binary instead, and
// WITHLOCK_STRESS=1 to run the scorecard at full counts (see scaled).
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/withlock/withlock/internal/testenv"
)

const withlockPackage = "github.com/withlock/withlock/cmd/withlock"

// withlockBin is the withlock binary under test; buildErr says why there is
// none, and every test that needs the binary fails with it.
var (
	withlockBin string
	buildErr    error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "withlock-integration-")
	if err != nil {
		buildErr = fmt.Errorf("create build dir: %w", err)
	} else {
		withlockBin, buildErr = prepareBinary(dir)
	}
	if buildErr != nil {
		fmt.Fprintln(os.Stderr, "integration: withlock binary unavailable:", buildErr)
	}
	testenv.UnignoreSignals()
	// goleak exits with the tests' status, or 1 when they passed but left goroutines behind.
	goleak.VerifyTestMain(runThenRemove{m: m, dir: dir})
}

// runThenRemove runs the tests, then removes the build directory (goleak
// exits the process after Run, so a deferred removal in TestMain would not run).
type runThenRemove struct {
	m   *testing.M
	dir string
}

func (r runThenRemove) Run() int {
	if r.dir != "" {
		defer os.RemoveAll(r.dir)
	}
	return r.m.Run()
}

// prepareBinary returns $WITHLOCK_TEST_BIN or builds cmd/withlock into dir.
func prepareBinary(dir string) (string, error) {
	if bin := os.Getenv("WITHLOCK_TEST_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("WITHLOCK_TEST_BIN: %w", err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("WITHLOCK_TEST_BIN: %w", err)
		}
		return abs, nil
	}
	bin := filepath.Join(dir, "withlock")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"build", "-o", bin}, mirroredBuildFlags()...)
	out, err := exec.CommandContext(ctx, "go", append(args, withlockPackage)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", withlockPackage, err, out)
	}
	if err := recordBuildInputs(ctx); err != nil {
		return "", err
	}
	return bin, nil
}

// mirroredBuildFlags gives the binary the -race and -tags (testBinaryTags)
// this test binary was built with, so `go test -race` also race-checks
// withlock itself.
func mirroredBuildFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var flags []string
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			flags = append(flags, "-race")
		}
	}
	if tags := testBinaryTags(); len(tags) > 0 {
		flags = append(flags, "-tags", strings.Join(tags, ","))
	}
	return flags
}

// recordBuildInputs opens every source file of the main module that the
// binary is built from. `go test` records files a test opens and reruns the
// test when one changes, so a cached pass never outlives a change to
// cmd/withlock or the packages it uses (the go build above is invisible to it).
func recordBuildInputs(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", "-json=Dir,GoFiles,CgoFiles,EmbedFiles,Module", withlockPackage).Output()
	if err != nil {
		return fmt.Errorf("go list %s: %w", withlockPackage, err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir                           string
			GoFiles, CgoFiles, EmbedFiles []string
			Module                        *struct {
				Main  bool
				GoMod string
			}
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("go list output: %w", err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		files := []string{p.Module.GoMod, filepath.Join(filepath.Dir(p.Module.GoMod), "go.sum")}
		for _, group := range [][]string{p.GoFiles, p.CgoFiles, p.EmbedFiles} {
			for _, name := range group {
				files = append(files, filepath.Join(p.Dir, name))
			}
		}
		for _, name := range files {
			if f, err := os.Open(name); err == nil {
				f.Close()
			}
		}
	}
}

// TestSmokeRunEcho: the simplest use prints the child's output, exits 0 and
// says nothing on stderr.
func TestSmokeRunEcho(t *testing.T) {
	stdout, stderr, code := runWithlock(t, "run", "--dir", t.TempDir(), "demo", "--", "echo", "hello")
	if code != 0 || stdout != "hello\n" || stderr != "" {
		t.Fatalf("withlock run demo -- echo hello: exit %d, stdout %q, stderr %q; want 0, \"hello\\n\", \"\"", code, stdout, stderr)
	}
}
