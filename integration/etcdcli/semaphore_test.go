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
