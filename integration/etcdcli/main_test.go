//go:build etcd

// Package etcdcli holds black-box tests of `withlock run --backend etcd`
// against an embedded etcd server: real processes, real signals.
//
// TestMain builds the binaries as they are installed, side by side:
// withlock (default build), withlock-etcd (-tags etcd) and
// withlock-metrics, with -race when this test binary has it. Most tests run
// the default withlock, so every run also goes through its exec of
// withlock-etcd.
package etcdcli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

var (
	binDir    string // withlock, withlock-etcd and withlock-metrics
	withlock  string // default build: execs withlock-etcd for --backend etcd
	buildErr  error
	raceBuild bool
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "withlock-etcdcli-")
	if err != nil {
		buildErr = err
	} else {
		binDir = dir
		buildErr = buildBinaries(dir)
	}
	if dir != "" {
		defer os.RemoveAll(dir)
	}
	m.Run() // its status becomes the exit status when TestMain returns
}

func buildBinaries(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var flags []string
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				flags = append(flags, "-race")
				raceBuild = true
			}
		}
	}
	const cmd = "github.com/withlock/withlock/cmd/"
	builds := [][]string{
		{"-o", filepath.Join(dir, "withlock"), cmd + "withlock"},
		{"-tags", "etcd", "-o", filepath.Join(dir, "withlock-etcd"), cmd + "withlock"},
		{"-o", filepath.Join(dir, "withlock-metrics"), cmd + "withlock-metrics"},
	}
	for _, b := range builds {
		args := append(append([]string{"build"}, flags...), b...)
		out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go %v: %w\n%s", args, err, out)
		}
	}
	withlock = filepath.Join(dir, "withlock")
	return recordBuildInputs(ctx)
}

// recordBuildInputs opens the main module's source files that the binaries
// are built from: go test records the files a test opens, so a cached pass
// never outlives a change to them (the go build above is invisible to it).
func recordBuildInputs(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "go", "list", "-deps", "-tags", "etcd",
		"-f", `{{if .Module}}{{if .Module.Main}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}
{{end}}{{end}}{{end}}`, "github.com/withlock/withlock/cmd/withlock", "github.com/withlock/withlock/cmd/withlock-metrics").Output()
	if err != nil {
		return fmt.Errorf("go list: %w", err)
	}
	for _, name := range strings.Fields(string(out)) {
		if f, err := os.Open(name); err == nil {
			f.Close()
		}
	}
	return nil
}
