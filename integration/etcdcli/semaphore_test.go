//go:build etcd

package etcdcli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestSemaphoreMax3: the user's check on etcd, `for i in $(seq 7); do
// withlock run --backend etcd b --max 3 --wait 1m -- build & done`, twice
// over: every command takes flock -n on the seat its WITHLOCK_SLOT names and
// refuses a slot outside 0…2, so never more than three run at once; all
// fourteen run, every slot is used.
func TestSemaphoreMax3(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	child := `exec 8>"$0/seat.$WITHLOCK_SLOT"
if [ "$WITHLOCK_SLOT" -ge 3 ] || [ "$WITHLOCK_MAX" != 3 ] || [ "$WITHLOCK_RUN_ID" != b ] || ! flock -n 8; then echo "violation slot $WITHLOCK_SLOT"; exit 99; fi
echo "$WITHLOCK_SLOT" >> "$0/slots"
sleep 0.3`
	var wg sync.WaitGroup
	failures := make(chan string, 14)
	for i := range 14 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := run(t, wl(t, s, "--max", "3", "--wait", "1m", "b", "--", "sh", "-c", child, dir))
			if r.code != 0 {
				failures <- fmt.Sprintf("run %d: exit %d, stdout %q, stderr %q", i, r.code, r.stdout, r.stderr)
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	data, err := os.ReadFile(filepath.Join(dir, "slots"))
	if err != nil {
		t.Fatal(err)
	}
	slots := strings.Fields(string(data))
	if len(slots) != 14 {
		t.Errorf("%d runs, want 14", len(slots))
	}
	slices.Sort(slots)
	if slots = slices.Compact(slots); !slices.Equal(slots, []string{"0", "1", "2"}) {
		t.Errorf("slots used %v, want 0, 1, 2", slots)
	}
}

// TestSemaphoreBreakAndMismatch: on etcd, `break --slot K RUN_ID` revokes
// one slot's holder (it exits 76), `break RUN_ID` the rest, a slot that
// does not exist is 64; --shared beside a --max holder is 64 naming both.
func TestSemaphoreBreakAndMismatch(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	child := `echo $WITHLOCK_SLOT > "$0/slot.$$"; echo "slot $WITHLOCK_SLOT"; exec sleep 600`
	var holders []*background
	for range 2 {
		holders = append(holders, start(t, wl(t, s, "--max", "2", "b", "--", "sh", "-c", child, dir)))
	}
	waitFor(t, 30*time.Second, "both slots held", func() bool { return len(mustGlob(t, filepath.Join(dir, "slot.*"))) == 2 })

	if r := run(t, wl(t, s, "--shared", "b", "true")); r.code != 64 || !strings.Contains(r.stderr, "--shared disagrees with --max 2") {
		t.Errorf("--shared beside --max 2 holders: exit %d, %q", r.code, r.stderr)
	}
	if r := run(t, admin(t, s, "break", "--slot", "5", "b")); r.code != 64 || !strings.Contains(r.stderr, "slots 0…1") {
		t.Errorf("break --slot 5: exit %d, %q", r.code, r.stderr)
	}
	if r := run(t, admin(t, s, "break", "--slot", "1", "b")); r.code != 0 || !strings.Contains(r.stdout, `broke the lock of run "b" slot 1`) {
		t.Errorf("break --slot 1: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	ended := 0 // the holder of slot 1
	if out, _ := holders[0].output(); !strings.Contains(out, "slot 1") {
		ended = 1
	}
	if res := holders[ended].wait(t, 30*time.Second); res.code != 76 || !strings.Contains(res.stdout, "slot 1") {
		t.Errorf("holder of the broken slot 1: exit %d, want 76\n%s%s", res.code, res.stdout, res.stderr)
	}
	other := holders[1-ended]
	if r := run(t, admin(t, s, "break", "b")); r.code != 0 || strings.Count(r.stdout, "broke the lock of") != 1 {
		t.Errorf("break b: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if res := other.wait(t, 10*time.Second); res.code != 76 {
		t.Errorf("holder of the other slot: exit %d, want 76\n%s", res.code, res.stderr)
	}
}

// TestPlainAndMaxEtcd: a plain run of a run id held by --max 2 holders is
// refused (75, naming a holder) or waits for them, and a --max newcomer
// waits for the plain one, as on the file backend. status names the size. The plain command takes
// `flock -x -n` on the file the --max holders hold `flock -s`.
func TestPlainAndMaxEtcd(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	holder := `exec 8>"$0/rw"; flock -s -n 8 || { echo "--max beside the plain run"; exit 99; }
touch "$0/slot.$WITHLOCK_SLOT"; while [ ! -e "$0/go" ]; do sleep 0.05; done`
	var holders []*background
	for range 2 {
		holders = append(holders, start(t, wl(t, s, "--max", "2", "b", "--", "sh", "-c", holder, dir)))
	}
	waitFor(t, 30*time.Second, "both slots held", func() bool { return len(mustGlob(t, filepath.Join(dir, "slot.*"))) == 2 })
	if r := run(t, wl(t, s, "b", "true")); r.code != 75 || !strings.Contains(r.stderr, `run "b" is locked by pid`) {
		t.Errorf("plain run beside 2 --max holders: exit %d, %q; want 75 naming a holder", r.code, r.stderr)
	}
	if st := run(t, admin(t, s, "status", "b")); !strings.Contains(st.stdout, "b [slot 1 of 2]") || !strings.Contains(st.stdout, "max 2") {
		t.Errorf("status b with 2 --max 2 holders: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	plain := start(t, wl(t, s, "--wait", "1m", "b", "--", "sh", "-c", `exec 8>"$0/rw"; flock -x -n 8 || { echo "plain beside a --max holder"; exit 99; }
touch "$0/plain"; while [ ! -e "$0/go2" ]; do sleep 0.05; done`, dir))
	waitFor(t, 10*time.Second, "the plain run to queue", func() bool { return len(contenders(t, s.Client(t), "b")) == 1 })
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	for i, h := range holders {
		if res := h.wait(t, 30*time.Second); res.code != 0 {
			t.Errorf("--max holder %d: exit %d\n%s%s", i, res.code, res.stdout, res.stderr)
		}
	}
	waitFor(t, 30*time.Second, "the plain run to start", func() bool { return exists(filepath.Join(dir, "plain")) })
	if r := run(t, wl(t, s, "--max", "2", "b", "true")); r.code != 75 || !strings.Contains(r.stderr, `run "b" is locked by pid`) {
		t.Errorf("--max 2 beside the plain holder: exit %d, %q; want 75 naming it", r.code, r.stderr)
	}
	late := start(t, wl(t, s, "--max", "2", "--wait", "1m", "b", "--", "sh", "-c", holder, dir))
	os.WriteFile(filepath.Join(dir, "go2"), nil, 0o644)
	if res := plain.wait(t, 30*time.Second); res.code != 0 {
		t.Errorf("plain run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := late.wait(t, 30*time.Second); res.code != 0 {
		t.Errorf("--max holder after the plain run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestPlainMaxMixEtcd: the mix row with --max 2 for the shared kind: 6
// processes run run id "mix" in a loop, ¾ `--max 2`, ¼ plain, 1 in 8
// SIGKILLed: never a plain holder with anyone else, never more than 2
// --max holders at once, both kinds seen.
func TestPlainMaxMixEtcd(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	workers, rounds := 6, mixRounds()
	st := runMixOf(t, s, filepath.Join(binDir, "withlock-etcd"), workers, rounds, 8, "--max", "2")
	st.report(t, "etcd --max 2/plain", workers, rounds)
	for _, f := range st.failures {
		t.Error(f)
	}
	if len(st.violations) > 0 {
		t.Errorf("%d exclusion violations, first: %s", len(st.violations), st.violations[0])
	}
	if st.kills == 0 {
		t.Error("no holder was SIGKILLed: the row did not test crashes")
	}
	if st.readerPeak > 2 {
		t.Errorf("%d --max 2 holders at once", st.readerPeak)
	}
	if st.readerPeak < 2 || st.execs == 0 {
		t.Errorf("--max holders at once %d, plain sections %d: want both kinds, 2 --max holders together", st.readerPeak, st.execs)
	}
}

// Negative control: with the broken-slots failpoint a plain run does not
// wait for --max holders nor keep them out: the same row records
// violations.
func TestPlainMaxMixEtcdControl(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	st := runMixOf(t, s, brokenSlotsBin(t), 6, 10, 8, "--max", "2")
	st.report(t, "etcd --max 2/plain, broken slots", 6, 10)
	if len(st.violations) == 0 {
		t.Fatal("no violations with a plain run that ignores --max holders: the row cannot fail")
	}
}
