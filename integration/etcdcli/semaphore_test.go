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
