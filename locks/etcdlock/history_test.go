//go:build etcd

package etcdlock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/internal/testwait"
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

// A run under way has a start marker that status does not read as a
// record and compaction does not fold; the run's own append deletes it; a
// marker whose lease is gone (its withlock was killed) is that run's
// record, "ended unobserved", counted once and folded like any other.
func TestStartMarkers(t *testing.T) {
	s := etcdtest.Start(t, etcdtest.Options{})
	l, cl, ctx := newLocker(s), s.Client(t), context.Background()
	prefix := l.HistoryPrefix("m")
	markers := func() int64 {
		t.Helper()
		resp, err := cl.Get(ctx, prefix+"s", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	lock := mustAcquire(t, l, "m", 0)
	lock.MarkStarted()
	testwait.For(t, 10*time.Second, "the start marker", func() bool { return markers() == 1 })
	if byRun, err := l.History(ctx, []string{"m"}); err != nil || len(byRun["m"]) != 0 {
		t.Errorf("a run under way read as a record: %v %v", byRun, err)
	}
	// A run whose withlock died: its marker stays, its lease is gone.
	dead := history.Record{Run: history.Run{Kind: history.KindRun, RunID: "m", StartedAt: 1, Result: history.ResultUnobserved, Pid: 42, FencingToken: 1}}
	data, _ := dead.Marshal()
	if _, err := cl.Put(ctx, prefix+"s7fffffff00000001", string(data)); err != nil {
		t.Fatal(err)
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	code := 0
	done := history.Record{Run: history.Run{Kind: history.KindRun, RunID: "m", StartedAt: 2, EndedAt: 3, Result: history.ResultExit, ExitCode: &code,
		FencingToken: uint64(lock.FencingToken())}}
	if err := l.AppendHistory(ctx, "m", done); err != nil {
		t.Fatal(err)
	}
	recs, err := l.History(ctx, []string{"m"})
	if err != nil || len(recs["m"]) != 2 || recs["m"][0].Pid != 42 || recs["m"][1].Result != history.ResultExit || markers() != 1 {
		t.Fatalf("after the run's append: %d markers, history %+v %v; want the dead run's, then the run's own", markers(), recs, err)
	}
	// Another run under way, through compaction.
	lease, err := cl.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, fmt.Sprintf("%ss%x", prefix, int64(lease.ID)), string(data)); err != nil {
		t.Fatal(err)
	}
	for i := range history.MaxLines {
		done.StartedAt, done.EndedAt = float64(10+i), float64(11+i) // records differ, as runs' do
		if err := l.AppendHistory(ctx, "m", done); err != nil {
			t.Fatal(err)
		}
	}
	recs, err = l.History(ctx, []string{"m"})
	sum := history.Summarize(recs["m"])
	if err != nil || sum.RunsTotal[history.ResultUnobserved] != 1 || sum.RunsTotal[history.ResultExit] != history.MaxLines+1 || markers() != 1 {
		t.Errorf("after compaction: %d markers (want the live one), runs %v %v", markers(), sum.RunsTotal, err)
	}
}
