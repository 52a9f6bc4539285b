package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/withlock/withlock/internal/jsontest"
)

func code(n int) *int { return &n }

func runRec(i int, result string, exit int) Record {
	return Record{Run: Run{Kind: KindRun, RunID: "job", StartedAt: float64(1000 + 2*i), EndedAt: float64(1001 + 2*i),
		Result: result, ExitCode: code(exit), Pid: 100 + i, Host: "h"}}
}

func lines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

func TestAppendRead(t *testing.T) {
	path := File(t.TempDir(), "job")
	if !strings.HasSuffix(path, ".runs") || len(filepath.Base(path)) != 64+len(Suffix) {
		t.Fatalf("path %s", path)
	}
	if err := Append(path, runRec(0, ResultExit, 3)); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, Record{Run: Run{Kind: KindRefused, RunID: "job"}, At: 2000, Reason: "conflict", Holder: &Holder{Pid: 7}}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	recs, skipped, err := Read(path)
	if err != nil || skipped != 0 || len(recs) != 2 {
		t.Fatalf("read %v %d %v", recs, skipped, err)
	}
	if *recs[0].ExitCode != 3 || recs[1].Holder.Pid != 7 {
		t.Fatalf("records %+v", recs)
	}
	s := Summarize(recs)
	if s.Last == nil || s.LastSuccess != nil || s.Skipped != 1 || s.Conflicts != 1 || s.RunsTotal[ResultExit] != 1 {
		t.Fatalf("summary %+v", s)
	}
}

func TestAppendRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o600)
	path := File(dir, "job")
	os.Symlink(target, path)
	if err := Append(path, runRec(0, ResultExit, 0)); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("append through a symlink: %v", err)
	}
}

// A torn line is skipped, and a whole line glued to its end is kept.
func TestReadSkipsTornAndForeign(t *testing.T) {
	data := []byte(`{"kind":"run","run_id":"job","started_at":1,"ended_at":2,"res` +
		`{"kind":"run","run_id":"job","started_at":3,"ended_at":4,"result":"exit","exit_code":0}` + "\n" +
		"not json\n" + `{"kind":"other"}` + "\n" + `{"kind":"refused","at":5}` + "\n")
	recs, skipped := Parse(data)
	if len(recs) != 2 || skipped != 3 || recs[0].StartedAt != 3 {
		t.Fatalf("parsed %+v, skipped %d", recs, skipped)
	}
}

// 10,000 runs leave a bounded file that still counts every one of them.
func TestBoundedAfterTenThousand(t *testing.T) {
	path := File(t.TempDir(), "job")
	for i := 0; i < 10000; i++ {
		rec := runRec(i, ResultExit, i%2)
		if i%10 == 0 {
			rec = Record{Run: Run{Kind: KindRefused, RunID: "job"}, At: float64(1000 + 2*i)}
		}
		if err := Append(path, rec); err != nil {
			t.Fatal(err)
		}
		if n := lines(t, path); n > MaxLines {
			t.Fatalf("after %d appends: %d lines", i+1, n)
		}
	}
	recs, skipped, err := Read(path)
	if err != nil || skipped != 0 {
		t.Fatal(skipped, err)
	}
	s := Summarize(recs)
	if s.RunsTotal[ResultExit] != 9000 || s.Conflicts != 1000 {
		t.Fatalf("totals %v, conflicts %d", s.RunsTotal, s.Conflicts)
	}
	if len(s.Runs) > KeepRuns+MaxLines || s.Last.StartedAt != 1000+2*9999 || s.LastSuccess.StartedAt != 1000+2*9998 {
		t.Fatalf("runs %d, last %+v, last success %+v", len(s.Runs), s.Last, s.LastSuccess)
	}
}

// Starts refused since the last run are still counted once a rewrite has
// dropped their lines.
func TestSkippedSurvivesRewrite(t *testing.T) {
	path := File(t.TempDir(), "job")
	Append(path, runRec(0, ResultExit, 0))
	for i := 0; i < 3*MaxLines; i++ {
		Append(path, Record{Run: Run{Kind: KindRefused, RunID: "job"}, At: float64(5000 + i)})
	}
	recs, _, _ := Read(path)
	s := Summarize(recs)
	if s.Skipped != 3*MaxLines || s.Conflicts != 3*MaxLines || lines(t, path) > MaxLines {
		t.Fatalf("skipped %d, conflicts %d, %d lines", s.Skipped, s.Conflicts, lines(t, path))
	}
}

// One append writes several records in one write(2) (a run's record after
// the record of a killed run it reclaimed); a run that ended unobserved
// counts as one, but is neither the last run with an exit status nor a
// success.
func TestAppendSeveral(t *testing.T) {
	path := File(t.TempDir(), "job")
	unobserved := Record{Run: Run{Kind: KindRun, RunID: "job", StartedAt: 5, Result: ResultUnobserved, Pid: 9, FencingToken: 4}}
	if err := Append(path, runRec(0, ResultExit, 0), unobserved, runRec(3, ResultExit, 2)); err != nil {
		t.Fatal(err)
	}
	recs, skipped, err := Read(path)
	if err != nil || skipped != 0 || len(recs) != 3 || lines(t, path) != 3 {
		t.Fatalf("read %+v %d %v", recs, skipped, err)
	}
	s := Summarize(recs)
	if s.RunsTotal[ResultUnobserved] != 1 || s.Runs[0].Result != ResultUnobserved || *s.Last.ExitCode != 2 || s.LastStart != 1006 {
		t.Fatalf("summary %+v", s)
	}
}

// Concurrent appenders (each its own descriptor, as separate processes
// have) lose nothing, across rewrites.
func TestConcurrentAppends(t *testing.T) {
	path := File(t.TempDir(), "job")
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				rec := runRec(w*50+i, ResultSignal, 0)
				if i%5 == 0 {
					rec = Record{Run: Run{Kind: KindRefused, RunID: "job"}, At: 1}
				}
				if err := Append(path, rec); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recs, skipped, err := Read(path)
	if err != nil || skipped != 0 {
		t.Fatal(skipped, err)
	}
	s := Summarize(recs)
	if s.RunsTotal[ResultSignal] != 800 || s.Conflicts != 200 {
		t.Fatalf("totals %v, conflicts %d", s.RunsTotal, s.Conflicts)
	}
}

// BenchmarkAppend is the cost a run pays for its record (one append per
// run, after its lock is released).
func BenchmarkAppend(b *testing.B) {
	path := File(b.TempDir(), "job")
	for i := 0; b.Loop(); i++ {
		if err := Append(path, runRec(i, ResultExit, 0)); err != nil {
			b.Fatal(err)
		}
	}
}

// A FIFO planted in place of the history neither blocks the writer nor
// takes its line.
func TestAppendRefusesFIFO(t *testing.T) {
	path := File(t.TempDir(), "job")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Append(path, runRec(0, ResultExit, 0)) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("append to a FIFO succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("append to a FIFO blocked")
	}
	if _, _, err := Read(path); err != nil {
		t.Logf("read of a FIFO: %v", err)
	}
}

// A run's line is what encoding/json writes for its Run (the same members
// in the same order, the same values), for every field set and for each
// left at its zero value: a field added to Run without its member in
// Marshal fails here.
func TestRunMarshalMatchesJSON(t *testing.T) {
	full := Run{Kind: KindRun, RunID: "r\x01\"\\<&>\u2028\xff", StartedAt: 1796003097.123456, EndedAt: 1796003127.5,
		Result: ResultSignal, ExitCode: code(0), Signal: "SIGTERM", Message: "m\n", Pid: 7, Host: "h",
		FencingToken: 1<<63 + 5, Command: "c\td", Slot: code(0), Shared: true}
	cases := jsontest.EachZeroed(t, full)
	for _, r := range cases {
		r.Kind = KindRun // the kind picks the encoder
		got, err := Record{Run: r}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := jsontest.Members(t, got), jsontest.Members(t, want); !reflect.DeepEqual(g, w) || bytes.HasSuffix(got, []byte("\n")) {
			t.Errorf("Marshal:\n %q\nencoding/json:\n %s", got, w)
		}
	}
}
