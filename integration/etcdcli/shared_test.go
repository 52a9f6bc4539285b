//go:build etcd

package etcdcli

import (
	"encoding/json"
	"fmt"
	"github.com/withlock/withlock/internal/failpoint"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/testwait"
	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestSharedReadersAndWriter: the user's check on etcd. Three `run
// --shared` readers run together (each holds `flock -s -n` on one file and
// is told WITHLOCK_SHARED=1), status lists the three as shared holders of
// the run id with the writer waiting, and a plain run (the writer) starts
// only once they have left; break revokes every shared holder.
func TestSharedReadersAndWriter(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	reader := `exec 8>"$0/rw"; flock -s -n 8 || { echo "reader beside the writer"; exit 99; }
[ "$WITHLOCK_SHARED" = 1 ] && [ "$WITHLOCK_RUN_ID" = db ] || { echo "env: $(env | grep WITHLOCK_)"; exit 98; }
echo "$WITHLOCK_FENCING_TOKEN" > "$0/reader.$$"
while [ ! -e "$0/go" ]; do sleep 0.05; done`
	var readers []*background
	for range 3 {
		readers = append(readers, start(t, wl(t, s, "--shared", "db", "--", "sh", "-c", reader, dir)))
	}
	waitFor(t, 30*time.Second, "three readers running together", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "reader.*"))
		return len(m) == 3
	})
	writer := start(t, wl(t, s, "--wait", "1m", "db", "--", "sh", "-c", `exec 8>"$0/rw"; flock -x -n 8 || { echo "writer beside a reader"; exit 99; }; touch "$0/wrote"`, dir))
	waitFor(t, 10*time.Second, "the writer to queue", func() bool { return len(contenders(t, s.Client(t), "db")) == 4 })

	st := run(t, admin(t, s, "status", "--json", "db"))
	var doc struct {
		Locks []struct {
			RunID string `json:"run_id"`
			Mode  string `json:"mode"`
			State string `json:"state"`
			Slot  int    `json:"slot"`
		}
		Semaphores []struct {
			RunID   string `json:"run_id"`
			Mode    string `json:"mode"`
			Holders int    `json:"holders"`
		}
	}
	if err := json.Unmarshal([]byte(st.stdout), &doc); err != nil || st.code != 0 {
		t.Fatalf("status --json: exit %d, %v\n%s%s", st.code, err, st.stdout, st.stderr)
	}
	if len(doc.Locks) != 3 || len(doc.Semaphores) != 1 || doc.Semaphores[0].Holders != 3 || doc.Semaphores[0].Mode != "shared" {
		t.Errorf("status while 3 readers hold and a writer waits:\n%s", st.stdout)
	}
	for i, l := range doc.Locks {
		if l.RunID != "db" || l.Mode != "shared" || l.State != "held" || l.Slot != i {
			t.Errorf("status lock %d: %+v; want db shared %d held", i, l, i)
		}
	}
	table := run(t, admin(t, s, "status", "db"))
	if !strings.Contains(table.stdout, "db [shared 2]") || !strings.Contains(table.stdout, "waiting: db 1") {
		t.Errorf("status table:\n%s", table.stdout)
	}
	if exists(filepath.Join(dir, "wrote")) {
		t.Fatal("the writer ran while the readers held the lock")
	}

	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	for i, r := range readers {
		if res := r.wait(t, 30*time.Second); res.code != 0 {
			t.Errorf("reader %d: exit %d\n%s%s", i, res.code, res.stdout, res.stderr)
		}
	}
	if res := writer.wait(t, 30*time.Second); res.code != 0 || !exists(filepath.Join(dir, "wrote")) {
		t.Errorf("writer: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	// break RUN_ID takes the lock from every shared holder: each exits 76.
	os.Remove(filepath.Join(dir, "go"))
	for _, f := range mustGlob(t, filepath.Join(dir, "reader.*")) {
		os.Remove(f)
	}
	readers = readers[:0]
	for range 2 {
		readers = append(readers, start(t, wl(t, s, "--shared", "db", "--", "sh", "-c", reader, dir)))
	}
	waitFor(t, 30*time.Second, "two readers running", func() bool { return len(mustGlob(t, filepath.Join(dir, "reader.*"))) == 2 })
	br := run(t, admin(t, s, "break", "db"))
	if br.code != 0 || strings.Count(br.stdout, `broke the lock of run "db"`) != 2 {
		t.Errorf("break db: exit %d\n%s%s", br.code, br.stdout, br.stderr)
	}
	for i, r := range readers {
		if res := r.wait(t, 30*time.Second); res.code != 76 {
			t.Errorf("broken reader %d: exit %d, want 76\n%s", i, res.code, res.stderr)
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rwSection is the mix row's command (as the file backend's row in
// integration/scorecard_sem_test.go): `flock -s -n` for a shared holder,
// `flock -x -n` for an exclusive one, on one file, so an exclusive holder
// with anyone else is recorded. Its grandchild (the sleep) keeps the
// descriptor, so a holder SIGKILLed meanwhile keeps the flock until the
// sleep ends; etcd frees its lease a TTL later.
const rwSection = `D=$0; touch "$D/started.$PPID"
exec 8>"$D/rw"
if ! flock -n "$HOW" 8; then echo "$WHO with someone else there (pid $$)" >> "$D/violations"; fi
echo "S $(date +%s%N)" >> "$D/times.$WHO.$PPID"
sh -c 'sleep 0.0$(($$ % 5 + 1))' & wait
echo "E $(date +%s%N)" >> "$D/times.$WHO.$PPID"`

// mixStress is what runMix saw.
type mixStress struct {
	completed, kills  int64
	failures          []string
	violations        []string
	readerPeak, execs int
}

// runMix runs workers × rounds runs of run id "mix" on s with bin
// (withlock-etcd): shared, or one time in four exclusive (a plain run);
// about one run in killEvery is SIGKILLed once its command has started.
func runMix(t *testing.T, s *etcdtest.Server, bin string, workers, rounds, killEvery int) mixStress {
	return runMixOf(t, s, bin, workers, rounds, killEvery, "--shared")
}

// runMixOf is runMix with the other kind's flags: --shared, or --max N
// (whose holders run together too, so they take the file shared).
//
// What the rows check beyond exclusion needs luck in one batch (two
// shared holders overlapping, an exclusive section, a SIGKILL): a batch
// that did not see all three is followed by another, up to three in all,
// and the stats add up. Every batch's runs count for the exclusion checks.
func runMixOf(t *testing.T, s *etcdtest.Server, bin string, workers, rounds, killEvery int, kind ...string) mixStress {
	t.Helper()
	var st mixStress
	for batch := 0; batch < 3 && (batch == 0 || st.readerPeak < 2 || st.execs == 0 || st.kills == 0); batch++ {
		b := runMixBatch(t, s, bin, workers, rounds, killEvery, kind...)
		st.completed += b.completed
		st.kills += b.kills
		st.failures = append(st.failures, b.failures...)
		st.violations = append(st.violations, b.violations...)
		st.readerPeak = max(st.readerPeak, b.readerPeak)
		st.execs += b.execs
	}
	return st
}

// runMixBatch is one batch of runMixOf, in a work dir of its own.
func runMixBatch(t *testing.T, s *etcdtest.Server, bin string, workers, rounds, killEvery int, kind ...string) mixStress {
	t.Helper()
	work := t.TempDir()
	var st mixStress
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				args := []string{"run", "--backend", "etcd", "--endpoints", s.Endpoint, "--ttl", "2s", "--wait", "2m"}
				env := cleanEnv()
				if rand.IntN(4) == 0 {
					env = append(env, "HOW=-x", "WHO=exclusive")
				} else {
					args = append(args, kind...)
					env = append(env, "HOW=-s", "WHO=shared")
				}
				cmd := exec.Command(bin, append(args, "mix", "--", "sh", "-c", rwSection, work)...)
				cmd.Env = env
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					mu.Lock()
					st.failures = append(st.failures, err.Error())
					mu.Unlock()
					return
				}
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				if rand.IntN(killEvery) == 0 {
					started := filepath.Join(work, "started."+strconv.Itoa(cmd.Process.Pid))
					testwait.Until(2*time.Minute, func() bool {
						select {
						case <-done:
							return true
						default:
							return exists(started)
						}
					})
					if exists(started) && cmd.Process.Signal(syscall.SIGKILL) == nil {
						atomic.AddInt64(&st.kills, 1)
					}
				}
				select {
				case <-done:
				case <-time.After(3 * time.Minute):
					cmd.Process.Kill()
					<-done
				}
				code := status(cmd.ProcessState)
				switch code {
				case 0:
					atomic.AddInt64(&st.completed, 1)
				case 128 + int(syscall.SIGKILL):
				default:
					mu.Lock()
					st.failures = append(st.failures, fmt.Sprintf("worker %d round %d: exit %d\n%s", w, i, code, stderr.String()))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if data, err := os.ReadFile(filepath.Join(work, "violations")); err == nil {
		st.violations = strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	st.readerPeak, st.execs = readerPeak(t, work)
	return st
}

// readerPeak is the most shared sections seen at once (from the times the
// commands wrote; a killed one's has no end and is left out) and how many
// exclusive sections were entered.
func readerPeak(t *testing.T, work string) (peak, exclusives int) {
	t.Helper()
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, f := range mustGlob(t, filepath.Join(work, "times.*")) {
		if strings.Contains(filepath.Base(f), ".exclusive.") {
			exclusives++
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(string(data))
		if len(fields) != 4 || fields[0] != "S" || fields[2] != "E" {
			continue
		}
		s, _ := strconv.ParseInt(fields[1], 10, 64)
		e, _ := strconv.ParseInt(fields[3], 10, 64)
		edges = append(edges, edge{s, 1}, edge{e, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta
	})
	n := 0
	for _, e := range edges {
		n += e.delta
		peak = max(peak, n)
	}
	return peak, exclusives
}

func (st mixStress) report(t *testing.T, what string, workers, rounds int) {
	t.Helper()
	t.Logf("%s: %d×%d runs: %d completed, %d SIGKILLed, %d violations, up to %d shared at once, %d exclusive sections",
		what, workers, rounds, st.completed, st.kills, len(st.violations), st.readerPeak, st.execs)
}

// sizes: CI's, or make stress's (WITHLOCK_STRESS).
func mixRounds() int {
	if os.Getenv("WITHLOCK_STRESS") != "" {
		return 50
	}
	return 6
}

// TestSharedExclusiveMixEtcd: the scorecard's shared/exclusive row on
// etcd. 6 processes run run id "mix" in a loop, ¾ `--shared`, ¼ plain
// (exclusive), 1 in 8 SIGKILLed while its command's grandchild runs on
// (etcd frees its key when the lease runs out): never an exclusive holder
// with anyone else, shared holders seen together, every run completed or
// killed.
func TestSharedExclusiveMixEtcd(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	workers, rounds := 6, mixRounds()
	st := runMix(t, s, filepath.Join(binDir, "withlock-etcd"), workers, rounds, 8)
	st.report(t, "etcd --shared/exclusive", workers, rounds)
	for _, f := range st.failures {
		t.Error(f)
	}
	if len(st.violations) > 0 {
		t.Errorf("%d exclusion violations, first: %s", len(st.violations), st.violations[0])
	}
	if st.kills == 0 {
		t.Error("no holder was SIGKILLed: the row did not test crashes")
	}
	if st.readerPeak < 2 || st.execs == 0 {
		t.Errorf("shared holders at once %d, exclusive sections %d: want both kinds, shared together", st.readerPeak, st.execs)
	}
}

// Negative control: withlock-etcd with the broken-slots failpoint gives
// each shared holder a mutex of its own, which no exclusive holder waits
// for: the same row records violations.
func TestSharedExclusiveMixEtcdControl(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	s := etcdtest.Start(t, etcdtest.Options{})
	st := runMix(t, s, brokenSlotsBin(t), 6, 10, 8)
	st.report(t, "etcd --shared/exclusive, broken slots", 6, 10)
	if len(st.violations) == 0 {
		t.Fatal("no violations with shared holders nobody waits for: the row cannot fail")
	}
}

// brokenSlotsBin is withlock-etcd run with the broken-slots failpoint
// (internal/failpoint): a script that execs it with WITHLOCK_FAILPOINTS set.
func brokenSlotsBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "withlock-etcd-broken-slots")
	script := fmt.Sprintf("#!/bin/sh\n%s=%s exec '%s' \"$@\"\n", failpoint.Env, failpoint.BrokenSlots, filepath.Join(binDir, "withlock-etcd"))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
