// Package packaging_test checks what a sysadmin installs: `make deb` (the
// Debian packages, their control fields and files, the binary, man page and
// completion inside them), `make install`, the Debian version scheme of
// deb-version, and the version a plain `go build` reports.
package packaging_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
}

// run runs a command in dir and returns its stdout; a failure ends the test
// with the command's output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// fetchNFPM makes sure nfpm's modules are in the module cache; when they
// cannot be fetched (no module proxy) the package tests skip, saying so.
func fetchNFPM(t *testing.T, root string) {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "github.com/goreleaser/nfpm/v2")
	cmd.Dir = filepath.Join(root, "packaging", "tools")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("nfpm cannot be fetched (go mod download in packaging/tools): %v\n%s", err, out)
	}
}

// debFile is one line of `dpkg-deb -c`.
type debFile struct{ mode, owner, path string }

func debContents(t *testing.T, deb string) []debFile {
	t.Helper()
	var files []debFile
	for _, line := range strings.Split(strings.TrimSpace(run(t, "", nil, "dpkg-deb", "-c", deb)), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c: cannot read %q", line)
		}
		if strings.HasPrefix(f[0], "d") {
			continue
		}
		files = append(files, debFile{mode: f[0], owner: f[1], path: f[5]})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files
}

func debField(t *testing.T, deb, field string) string {
	t.Helper()
	return strings.TrimSpace(run(t, "", nil, "dpkg-deb", "-f", deb, field))
}

func TestDeb(t *testing.T) {
	needTools(t, "make", "git", "dpkg-deb", "gzip")
	root := repoRoot(t)
	fetchNFPM(t, root)
	tmp := t.TempDir()
	bin, dist := filepath.Join(tmp, "bin"), filepath.Join(tmp, "dist")
	run(t, root, nil, "make", "--no-print-directory", "-s", "deb", "BIN="+bin, "DIST="+dist)

	version := strings.TrimSpace(run(t, root, nil, "packaging/deb-version"))
	arch := runtime.GOARCH
	deb := filepath.Join(dist, fmt.Sprintf("withlock_%s_%s.deb", version, arch))
	etcdDeb := filepath.Join(dist, fmt.Sprintf("withlock-etcd_%s_%s.deb", version, arch))
	entries, _ := os.ReadDir(dist)
	if len(entries) != 2 {
		t.Errorf("dist/ has %d files, want the two packages: %v", len(entries), entries)
	}

	for field, want := range map[string]string{"Package": "withlock", "Version": version, "Architecture": arch, "Section": "utils"} {
		if got := debField(t, deb, field); got != want {
			t.Errorf("withlock: %s %q, want %q", field, got, want)
		}
	}
	if got := debField(t, deb, "Maintainer"); !regexp.MustCompile(`^.+ <.+@.+>$`).MatchString(got) {
		t.Errorf("withlock: Maintainer %q is not 'Name <address>'", got)
	}
	if got := debField(t, deb, "Description"); !strings.Contains(got, "lock") {
		t.Errorf("withlock: Description %q", got)
	}
	wantFiles := []debFile{
		{"-rwxr-xr-x", "root/root", "./usr/bin/withlock"},
		{"-rwxr-xr-x", "root/root", "./usr/bin/withlock-metrics"},
		{"-rw-r--r--", "root/root", "./usr/share/bash-completion/completions/withlock"},
		{"-rw-r--r--", "root/root", "./usr/share/fish/vendor_completions.d/withlock.fish"},
		{"-rw-r--r--", "root/root", "./usr/share/man/man1/withlock.1.gz"},
		{"-rw-r--r--", "root/root", "./usr/share/zsh/vendor-completions/_withlock"},
	}
	if got := debContents(t, deb); fmt.Sprint(got) != fmt.Sprint(wantFiles) {
		t.Errorf("withlock's files:\n%v\nwant:\n%v", got, wantFiles)
	}
	if got, want := debField(t, etcdDeb, "Depends"), "withlock (= "+version+")"; got != want {
		t.Errorf("withlock-etcd: Depends %q, want %q", got, want)
	}
	if got, want := fmt.Sprint(debContents(t, etcdDeb)), fmt.Sprint([]debFile{{"-rwxr-xr-x", "root/root", "./usr/bin/withlock-etcd"}}); got != want {
		t.Errorf("withlock-etcd's files: %s, want %s", got, want)
	}

	// What dpkg -i would put in /, unpacked into a directory instead.
	dest := filepath.Join(tmp, "root")
	run(t, "", nil, "dpkg-deb", "-x", deb, dest)
	run(t, "", nil, "dpkg-deb", "-x", etcdDeb, dest)
	withlock := filepath.Join(dest, "usr/bin/withlock")

	// As cron runs it: nothing in the environment but PATH=/usr/bin:/bin.
	described := strings.TrimSpace(run(t, root, nil, "git", "describe", "--always", "--dirty", "--tags"))
	cronEnv := []string{"PATH=/usr/bin:/bin"}
	if got, want := strings.TrimSpace(run(t, tmp, cronEnv, withlock, "--version")), "withlock version "+described; got != want {
		t.Errorf("--version: %q, want %q", got, want)
	}
	if got := run(t, tmp, append(cronEnv, "WITHLOCK_DIR="+filepath.Join(tmp, "locks")), withlock, "run", "job", "--", "sh", "-c", "echo token $WITHLOCK_FENCING_TOKEN"); !regexp.MustCompile(`^token [1-9][0-9]*\n$`).MatchString(got) {
		t.Errorf("withlock run from the package printed %q", got)
	}
	// withlock metrics runs the packaged withlock-metrics, beside withlock.
	if got := run(t, tmp, append(cronEnv, "WITHLOCK_DIR="+filepath.Join(tmp, "locks")), withlock, "metrics"); !strings.Contains(got, `withlock_runs_total{result="exit",run_id="job"} 1`) {
		t.Errorf("withlock metrics from the package printed %q", got)
	}
	etcdHelp := run(t, tmp, cronEnv, filepath.Join(dest, "usr/bin/withlock-etcd"), "run", "--help")
	if !strings.Contains(etcdHelp, "--endpoints") {
		t.Errorf("withlock-etcd run --help does not offer --endpoints:\n%s", etcdHelp)
	}

	if _, err := exec.LookPath("man"); err == nil {
		page := run(t, tmp, append(os.Environ(), "MANWIDTH=100", "MANPAGER=cat"), "man", "-l", filepath.Join(dest, "usr/share/man/man1/withlock.1.gz"))
		for _, want := range []string{"WITHLOCK(1)", "EXIT STATUS", "withlock " + described, "/usr/bin/withlock run"} {
			if !strings.Contains(strings.ReplaceAll(page, "\u2010", "-"), want) {
				t.Errorf("the packaged man page lacks %q", want)
			}
		}
	}

	// The packaged completion, with the packaged binary: commands, and the
	// run id of a lock held in the lock directory.
	lockDir := filepath.Join(tmp, "held")
	holder := exec.Command(withlock, "run", "held-job", "--", "sleep", "120")
	holder.Env = append(cronEnv, "WITHLOCK_DIR="+lockDir)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if held, _ := filepath.Glob(filepath.Join(lockDir, "*.lock")); len(held) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("withlock run held-job: no lock file after 20s")
		}
	}
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err == nil {
		script := `source "$1"; source "$2"; shift 2; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; __withlock_bash_autocomplete; printf '%s\n' "${COMPREPLY[@]}"`
		complete := func(words ...string) string {
			return run(t, tmp, append(cronEnv, "WITHLOCK_DIR="+lockDir), "bash", append([]string{"--norc", "--noprofile", "-c", script, "bash",
				bashCompletion, filepath.Join(dest, "usr/share/bash-completion/completions/withlock"), withlock}, words...)...)
		}
		if got := complete("ru"); got != "run\n" {
			t.Errorf("packaged bash completion of 'withlock ru': %q", got)
		}
		if got := complete("status", ""); got != "held-job\n" {
			t.Errorf("packaged bash completion of 'withlock status ': %q, want the run id held-job", got)
		}
	}
	if _, err := exec.LookPath("zsh"); err == nil {
		t.Run("zsh", func(t *testing.T) { testZshCompletion(t, dest, lockDir) })
	}
}

// testZshCompletion types into an interactive zsh (on a pty) that loads
// the packaged _withlock through compinit, as a user's shell does.
func testZshCompletion(t *testing.T, dest, lockDir string) {
	home := t.TempDir()
	cmd := exec.Command("zsh", "-f", "-i")
	cmd.Env = []string{"HOME=" + home, "TERM=dumb", "PATH=" + filepath.Join(dest, "usr/bin") + ":/usr/bin:/bin", "WITHLOCK_DIR=" + lockDir}
	cmd.Dir = home
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatalf("start zsh on a pty: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
	})
	screen := &ptyOutput{}
	go func() { _, _ = io.Copy(screen, f) }()
	fpath := filepath.Join(dest, "usr/share/zsh/vendor-completions")
	fmt.Fprintf(f, "fpath=(%s $fpath); autoload -Uz compinit; compinit -u -D; PS1='READY> '\n", fpath)
	screen.waitFor(t, "READY> ")
	// A unique match is inserted; an ambiguous one is listed.
	fmt.Fprint(f, "withlock ru\t")
	screen.waitFor(t, "withlock run")
	fmt.Fprint(f, "\x15withlock completion \t") // ^U: clear the line
	screen.waitFor(t, "fish")
	fmt.Fprint(f, "\x15withlock status \t") // the run id of TestDeb's holder
	screen.waitFor(t, "withlock status held-job")
}

// ptyOutput collects what a program wrote to its terminal.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (p *ptyOutput) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buf.Write(b)
}

// waitFor waits (up to 20 s) until s has appeared on the terminal, then
// forgets what came before it.
func (p *ptyOutput) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p.mu.Lock()
		text := p.buf.String()
		if i := strings.Index(text, s); i >= 0 {
			p.buf.Next(i + len(s))
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%q did not appear on the terminal; it shows:\n%q", s, text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// make install puts withlock, its man page and completion under
// DESTDIR/PREFIX, and the etcd binary only with install-etcd.
func TestMakeInstall(t *testing.T) {
	needTools(t, "make", "git", "install")
	root := repoRoot(t)
	tmp := t.TempDir()
	dest := filepath.Join(tmp, "dest")
	bin := filepath.Join(tmp, "bin")
	run(t, root, nil, "make", "--no-print-directory", "-s", "install", "DESTDIR="+dest, "PREFIX=/usr", "BIN="+bin)
	want := map[string]os.FileMode{
		"usr/bin/withlock":                                  0o755,
		"usr/bin/withlock-metrics":                          0o755,
		"usr/share/man/man1/withlock.1":                     0o644,
		"usr/share/bash-completion/completions/withlock":    0o644,
		"usr/share/zsh/site-functions/_withlock":            0o644,
		"usr/share/fish/vendor_completions.d/withlock.fish": 0o644,
	}
	got := map[string]os.FileMode{}
	_ = filepath.WalkDir(dest, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fi, _ := d.Info()
			rel, _ := filepath.Rel(dest, path)
			got[rel] = fi.Mode().Perm()
		}
		return nil
	})
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("make install put:\n%v\nwant:\n%v", got, want)
	}
	if out := run(t, tmp, nil, filepath.Join(dest, "usr/bin/withlock"), "completion", "zsh"); !strings.HasPrefix(out, "#compdef withlock\n") {
		t.Errorf("installed withlock completion zsh: %q", out)
	}
}

// deb-version turns git describe into a Debian version that sorts in
// release order; dpkg itself judges the order.
func TestDebVersion(t *testing.T) {
	needTools(t, "git", "dpkg")
	root := repoRoot(t)
	repo := t.TempDir()
	script, err := os.ReadFile(filepath.Join(root, "packaging", "deb-version"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "packaging"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "packaging", "deb-version"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
		"GIT_AUTHOR_DATE=2026-11-30T09:44:01Z", "GIT_COMMITTER_DATE=2026-11-30T09:44:01Z", "GIT_CONFIG_NOSYSTEM=1", "HOME="+repo)
	git := func(args ...string) string { return strings.TrimSpace(run(t, repo, gitEnv, "git", args...)) }
	version := func() string { return strings.TrimSpace(run(t, repo, gitEnv, "packaging/deb-version")) }
	commit := func(msg string) {
		if err := os.WriteFile(filepath.Join(repo, "f"), []byte(msg), 0o644); err != nil {
			t.Fatal(err)
		}
		git("add", "-A")
		git("commit", "-q", "-m", msg)
	}
	git("init", "-q")
	commit("one")
	hash := git("rev-parse", "--short=12", "HEAD")
	untagged := version()
	if want := "0.0~git20261130094401." + hash; untagged != want {
		t.Errorf("untagged: %q, want %q", untagged, want)
	}
	git("tag", "v1.2.3-rc1")
	rc := version()
	if rc != "1.2.3~rc1" {
		t.Errorf("at v1.2.3-rc1: %q", rc)
	}
	commit("two")
	git("tag", "v1.2.3")
	release := version()
	if release != "1.2.3" {
		t.Errorf("at v1.2.3: %q", release)
	}
	commit("three")
	after := version()
	if want := "1.2.3+1.g" + git("rev-parse", "--short=12", "HEAD"); after != want {
		t.Errorf("one commit after v1.2.3: %q, want %q", after, want)
	}
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirty := version()
	if dirty != after+".dirty" {
		t.Errorf("with a changed file: %q, want %q", dirty, after+".dirty")
	}
	order := []string{untagged, rc, release, after, "1.2.4"}
	for i := 1; i < len(order); i++ {
		cmd := exec.Command("dpkg", "--compare-versions", order[i-1], "lt", order[i])
		if err := cmd.Run(); err != nil {
			t.Errorf("dpkg does not sort %q before %q: %v", order[i-1], order[i], err)
		}
	}
	for _, v := range order {
		if !regexp.MustCompile(`^[0-9][A-Za-z0-9.+~]*$`).MatchString(v) {
			t.Errorf("%q is not a valid Debian upstream version", v)
		}
	}
}

// A user who builds with plain `go build` (or go install from a checkout)
// sees the commit, never a bare "dev". The build is of a fresh clone, so
// the version is that of the committed HEAD.
func TestGoBuildVersion(t *testing.T) {
	needTools(t, "git")
	if testing.Short() {
		t.Skip("builds withlock from a clone: not with -short")
	}
	root := repoRoot(t)
	src := filepath.Join(t.TempDir(), "src")
	run(t, "", nil, "git", "clone", "-q", "--no-hardlinks", root, src)
	head := strings.TrimSpace(run(t, src, nil, "git", "rev-parse", "--short=12", "HEAD"))
	exe := filepath.Join(t.TempDir(), "withlock")
	// GOFLAGS: this machine's go env may say -buildvcs=false; a user's does not.
	run(t, src, append(os.Environ(), "GOFLAGS=-buildvcs=auto"), "go", "build", "-o", exe, "./cmd/withlock")
	got := strings.TrimSpace(run(t, src, nil, exe, "--version"))
	// At a tag, the go command reports the tag; elsewhere a pseudo-version
	// ending in the commit (v0.0.0-20261130094401-4077128fdd54, or
	// v1.2.4-0.20261130094401-4077128fdd54 after v1.2.3).
	tag, _ := exec.Command("git", "-C", src, "describe", "--exact-match", "--tags", "--match", "v[0-9]*").Output()
	pseudo := regexp.MustCompile(`^withlock version v\d+\.\d+\.\d+-(\S+\.)?\d{14}-` + head + `$`)
	if !pseudo.MatchString(got) && got != "withlock version "+strings.TrimSpace(string(tag)) {
		t.Errorf("go build: %q, want a version naming commit %s", got, head)
	}
}
