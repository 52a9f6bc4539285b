//go:build etcd

package etcdcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
)

// TestMutualExclusion: 8 processes run the same run id in a loop with
// --wait. The child takes an occupancy marker (mkdir fails if another
// child holds it) and appends its fencing token to a log: no overlap, and
// the tokens, in the order the children held the lock, strictly increase.
func TestMutualExclusion(t *testing.T) {
	const workers = 8
	rounds := 8
	if os.Getenv("WITHLOCK_STRESS") != "" {
		rounds = 50
	}
	s := etcdtest.Start(t, etcdtest.Options{})
	dir := t.TempDir()
	marker, tokens := filepath.Join(dir, "occupied"), filepath.Join(dir, "tokens")
	child := `mkdir "$0" || { echo overlap; exit 99; }
echo "$WITHLOCK_FENCING_TOKEN" >> "$1"
sleep 0.01
rmdir "$0"`

	var wg sync.WaitGroup
	failures := make(chan string, workers*rounds)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				r := run(t, wl(t, s, "--wait", "60s", "job", "--", "sh", "-c", child, marker, tokens))
				if r.code != 0 {
					failures <- fmt.Sprintf("worker %d round %d: exit %d, stdout %q, stderr %q", w, i, r.code, r.stdout, r.stderr)
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	data, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(data))
	if len(lines) != workers*rounds {
		t.Fatalf("%d runs held the lock; want %d", len(lines), workers*rounds)
	}
	var last int64
	for i, l := range lines {
		tok, err := strconv.ParseInt(l, 10, 64)
		if err != nil || tok <= last {
			t.Fatalf("token %d is %q after %d; want strictly increasing", i, l, last)
		}
		last = tok
	}
}
