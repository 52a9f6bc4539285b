//go:build etcd

package main

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks/etcdlock"
	"github.com/withlock/withlock/locks/history"
)

// The run history on --backend etcd (SPEC §8): kept under the lock's
// prefix (locks/etcdlock/history.go), written after the release as on the
// file backend, and shown by status in the same fields.

// etcdHistoryBound caps a run's append: past it the record is lost (one
// warning), the run's exit status is not held up further.
const etcdHistoryBound = 2 * time.Second

func init() {
	historyWriters["etcd"] = func(c *cli.Command, runID string) func(...history.Record) error {
		return func(recs ...history.Record) error {
			l, err := etcdLocker(c, zerolog.Nop())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), etcdHistoryBound)
			defer cancel()
			return l.AppendHistory(ctx, runID, recs...)
		}
	}
}

// etcdHistory adds the history of the named run ids (none: of every run
// id) to the status report of the locks in etcd, as gatherStatus does for
// the file backend.
func etcdHistory(l *etcdlock.Locker, st *statusReport, named []string) {
	st.named = named
	byRun, err := l.History(context.Background(), st.named)
	if err != nil {
		st.Errors = append(st.Errors, err.Error())
	}
	byID := map[string]runRecords{}
	for id, recs := range byRun {
		byID[id] = runRecords{where: l.HistoryPrefix(id), recs: recs}
	}
	addHistory(st, byID, func(id string) lockStatus {
		return lockStatus{RunID: id, State: "free", Mode: "exclusive", Slot: -1}
	})
}
