//go:build etcd

package etcdlock

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/history"
)

// Run history (SPEC §8) in etcd: one key per record (a JSON line of
// locks/history) under <prefix>%runs/<escaped run id>/, in the order of
// their create revisions. An escaped run id never holds "%r", so no
// mutex's key range overlaps this one, and the last segment of a record's
// key is not a lease in hex: Status does not take it for a contender.
// Past history.MaxLines keys the oldest are folded into the run id's
// totals key by history.Bound, in one transaction that holds only if
// nobody changed the totals meanwhile: counters never go down.
//
// A run under way has a start marker there too, "s"<lease in hex>, kept
// past its lease: its record as if it had ended unobserved. The run's own
// append deletes it. A marker whose lease is gone is the run of a withlock
// that died (SIGKILL): read, and folded, as that run's record, as the file
// backend records a stale lock it reclaims. (Between a run's release and
// its append, a reader may take its marker for one: for that moment, or
// in the totals if a compaction folds it then.)

// MarkStarted puts the lock's start marker in the background; Release
// waits for it.
func (k *Lock) MarkStarted() {
	host, _ := os.Hostname()
	runID := cmp.Or(k.named, k.RunID)
	data, _ := history.Record{Run: history.Run{Kind: history.KindRun, RunID: runID, StartedAt: locks.Epoch(time.Now()), Result: history.ResultUnobserved,
		Pid: os.Getpid(), Host: host, FencingToken: uint64(k.token), Command: k.l.Command, Slot: k.slot, Shared: k.shared}}.Marshal()
	k.marked = make(chan struct{})
	go func() {
		defer close(k.marked)
		ctx, cancel := k.l.rpc(context.Background())
		defer cancel()
		if _, err := k.cl.Put(ctx, k.l.HistoryPrefix(runID)+"s"+leaseHex(k.Lease), string(data)); err != nil {
			k.l.Log.Debug().Err(err).Str("run_id", runID).Msg("start marker not written")
		}
	}()
}

// liveMarker reports whether key is the start marker of a lease the
// cluster still has.
func liveMarker(ctx context.Context, cl *clientv3.Client, key string) (bool, error) {
	seg, ok := strings.CutPrefix(key[strings.LastIndexByte(key, '/')+1:], "s")
	id, err := strconv.ParseInt(seg, 16, 64)
	if !ok || err != nil {
		return false, nil
	}
	resp, err := cl.TimeToLive(ctx, clientv3.LeaseID(id))
	return err == nil && resp.TTL != -1, err
}

func (l *Locker) historyRange() string { return l.prefix() + "%runs/" }

// HistoryPrefix is where the history of runID is kept.
func (l *Locker) HistoryPrefix(runID string) string {
	return l.historyRange() + escapeRunID(runID) + "/"
}

// AppendHistory adds recs to the history of runID in one transaction, with
// the start markers of their runs deleted, then bounds it.
func (l *Locker) AppendHistory(ctx context.Context, runID string, recs ...history.Record) error {
	prefix := l.HistoryPrefix(runID)
	return l.query(ctx, func(ctx context.Context, cl *clientv3.Client) error {
		markers, err := cl.Get(ctx, prefix+"s", clientv3.WithPrefix())
		if err != nil {
			return err
		}
		var puts []clientv3.Op
		for _, rec := range recs {
			data, err := rec.Marshal()
			if err != nil {
				return err
			}
			puts = append(puts, clientv3.OpPut(prefix+"r"+rand.Text(), string(data)))
		}
		for _, kv := range markers.Kvs { // each parsed once, deleted at most once
			m, _ := history.Parse(kv.Value)
			if len(m) == 1 && slices.ContainsFunc(recs, func(r history.Record) bool { return r.Kind == history.KindRun && r.FencingToken == m[0].FencingToken }) {
				puts = append(puts, clientv3.OpDelete(string(kv.Key)))
			}
		}
		if _, err := cl.Txn(ctx).Then(puts...).Commit(); err != nil {
			return err
		}
		return boundHistory(ctx, cl, prefix)
	})
}

// boundHistory folds the oldest records under prefix into its totals key
// once there are more than history.MaxLines: at most KeepRuns+KeepRefused
// at once, so that one transaction deletes at most 100 keys (etcd allows
// 128 operations in one).
func boundHistory(ctx context.Context, cl *clientv3.Client, prefix string) error {
	resp, err := cl.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count <= history.MaxLines {
		return err
	}
	resp, err = cl.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err != nil {
		return err
	}
	totalsKey, totalsRev := prefix+"totals", int64(0)
	var recs []history.Record
	var oldest []*mvccpb.KeyValue // the records folded, if Bound drops them
	for _, kv := range resp.Kvs {
		running, err := liveMarker(ctx, cl, string(kv.Key))
		switch {
		case err != nil:
			return err
		case running:
			continue
		case string(kv.Key) == totalsKey:
			totalsRev = kv.ModRevision
		case len(oldest) == history.KeepRuns+history.KeepRefused:
			continue
		default:
			oldest = append(oldest, kv)
		}
		rec, _ := history.Parse(kv.Value) // none for a foreign value: deleted
		recs = append(recs, rec...)
	}
	bounded := history.Bound(recs)
	kept := map[string]bool{}
	for _, rec := range bounded[1:] {
		data, _ := rec.Marshal() // as it was put
		kept[string(data)] = true
	}
	totals, err := json.Marshal(bounded[0])
	if err != nil {
		return err
	}
	ops := []clientv3.Op{clientv3.OpPut(totalsKey, string(totals))}
	for _, kv := range oldest {
		if !kept[string(kv.Value)] {
			ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		}
	}
	// If the totals changed meanwhile another compaction won: this one is
	// not needed.
	_, err = cl.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(totalsKey), "=", totalsRev)).Then(ops...).Commit()
	return err
}

// History returns the records of every run id with a history, or of the
// given run ids only (none: every one), in the order they were written.
func (l *Locker) History(ctx context.Context, runIDs []string) (map[string][]history.Record, error) {
	byRun := map[string][]history.Record{}
	err := l.query(ctx, func(ctx context.Context, cl *clientv3.Client) error {
		ranges := []string{l.historyRange()}
		if len(runIDs) > 0 {
			ranges = nil
			for _, id := range runIDs {
				ranges = append(ranges, l.HistoryPrefix(id))
			}
		}
		for _, r := range ranges {
			resp, err := cl.Get(ctx, r, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
			if err != nil {
				return err
			}
			for _, kv := range resp.Kvs {
				id, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), l.historyRange()), "/")
				running, err := liveMarker(ctx, cl, string(kv.Key))
				if err != nil {
					return err
				}
				if running {
					continue // a run under way: status shows its holder
				}
				recs, _ := history.Parse(kv.Value)
				byRun[unescapeRunID(id)] = append(byRun[unescapeRunID(id)], recs...)
			}
		}
		return nil
	})
	return byRun, err
}
