//go:build etcd

package etcdlock_test

import (
	"context"
	"sync"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks/etcdlock/etcdtest"
	"github.com/withlock/withlock/locks/history"
)

// Concurrent appends to one run id's history in etcd lose no record and no
// count, the history stays bounded, and the mutex does not see its keys.
func TestHistoryBoundedAndCounted(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l := newLocker(s)
	const writers, each = 5, 70 // 350 runs and refused starts, past MaxLines
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				code := i % 3
				rec := history.Record{Run: history.Run{Kind: history.KindRun, RunID: "a/b", StartedAt: float64(w*each + i + 1), EndedAt: float64(w*each + i + 2),
					Result: history.ResultExit, ExitCode: &code}}
				if i%7 == 0 {
					rec = history.Record{Run: history.Run{Kind: history.KindRefused, RunID: "a/b"}, At: float64(w*each + i + 1), Reason: "conflict"}
				}
				if err := l.AppendHistory(context.Background(), "a/b", rec); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	byRun, err := l.History(context.Background(), nil)
	if err != nil || len(byRun) != 1 {
		t.Fatalf("history: %v %v", byRun, err)
	}
	sum := history.Summarize(byRun["a/b"])
	refused := writers * ((each + 6) / 7) // i%7 == 0
	if sum.RunsTotal[history.ResultExit] != writers*each-refused || sum.Conflicts != refused {
		t.Errorf("runs %v, conflicts %d; want %d runs, %d conflicts", sum.RunsTotal, sum.Conflicts, writers*each-refused, refused)
	}
	resp, err := s.Client(t).Get(context.Background(), l.HistoryPrefix("a/b"), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count > history.MaxLines+writers || len(sum.Runs) < history.KeepRuns {
		t.Errorf("%d keys (%v), %d runs kept: want at most %d keys, the last %d runs", resp.Count, err, len(sum.Runs), history.MaxLines+writers, history.KeepRuns)
	}
	if owners, err := l.Status(context.Background()); err != nil || len(owners) != 0 {
		t.Errorf("status sees the history as locks: %v %v", owners, err)
	}
	mustAcquire(t, l, "a/b", 0) // the history keys are not contenders
	if byRun, _ := l.History(context.Background(), []string{"a"}); len(byRun) != 0 {
		t.Errorf("run a has the history of a/b: %v", byRun)
	}
}
