package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/filelock"
	"github.com/withlock/withlock/locks/scope"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show who holds which lock, alive or stale, and what waits for gc",
		ArgsUsage: "[RUN_ID...]",
		Description: `Lists every run lock (holder, liveness, age, expiry, fencing token, why it
is stale), the files waiting for gc, and the scope registry's delegation
tree; with RUN_IDs only those locks, with --scopes only the registry.
Nothing is changed. Exits 0, or 73 when something could not be read (what
could is still shown). Details: withlock(1).

Examples:
   withlock status
   withlock status nightly-backup
   withlock status --scopes
   withlock status --json | jq -r '.locks[] | select(.state == "stale") | .run_id'`,
		Flags: lockFlags([]cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON document (fields: see README)"},
			&cli.BoolFlag{Name: "scopes", Usage: "show only the scope registry, as a delegation tree"},
			scopeFileFlag(),
		}),
		Action: statusAction,
	}
}

func statusAction(_ context.Context, c *cli.Command) error {
	if c.Bool("scopes") {
		return statusScopes(c)
	}
	if c.String("backend") == "etcd" {
		return etcdStatus(c)
	}
	locker, err := filelock.NewRunLocker(filelock.ResolveDir(c.String("dir"), os.Getenv), locks.DefaultTTL)
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	st := gatherStatus(locker, c.Args().Slice(), scope.FilePath(c.String("scope-file"), os.Getenv))
	if c.Bool("json") {
		return writeJSON(c, st, st.Errors)
	}
	writeStatusTable(c.Root().Writer, st)
	return statusErrors(st.Errors)
}

// statusScopes is `withlock status --scopes`: the scope registry alone, as
// a delegation tree or, with --json, {file, allocations}.
func statusScopes(c *cli.Command) error {
	if c.NArg() > 0 {
		return usageError("status --scopes: takes no RUN_ID (got %q)", c.Args().Slice())
	}
	st := &statusReport{Errors: []string{}}
	ss := gatherScopes(scope.FilePath(c.String("scope-file"), os.Getenv), st)
	switch {
	case c.Bool("json"):
		return writeJSON(c, ss, st.Errors)
	case len(ss.Allocations) == 0:
		fmt.Fprintf(c.Root().Writer, "no scope allocations in %s\n", ss.File)
	default:
		writeScopeTable(c.Root().Writer, ss, "")
	}
	return statusErrors(st.Errors)
}

// writeJSON prints v as status --json does, then reports errs.
func writeJSON(c *cli.Command, v any, errs []string) error {
	enc := json.NewEncoder(c.Root().Writer)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return exitWith(exitCantCreate, err)
	}
	return statusErrors(errs)
}

// statusErrors prints what status could not read, one line each, and
// exits 73 if there was anything.
func statusErrors(errs []string) error {
	for _, e := range errs {
		fmt.Fprintln(os.Stderr, "withlock: status: "+e)
	}
	if len(errs) > 0 {
		return silentExit(exitCantCreate)
	}
	return nil
}

// statusReport is the JSON document of `withlock status --json`. Every
// field is always present (empty lists are [], absent strings ""), so a
// script never has to tell null from missing.
type statusReport struct {
	Dir       string           `json:"dir"`
	Now       float64          `json:"now"`
	Locks     []lockStatus     `json:"locks"`
	Leftovers []leftoverStatus `json:"leftovers"`
	Scopes    *scopeStatus     `json:"scopes"` // null when RUN_IDs were named
	// Semaphores sums up the run ids used with --max or --shared (sem_status.go).
	Semaphores []semStatus `json:"semaphores"`
	Errors     []string    `json:"errors"`

	named []string // the run ids asked about; none: all
}

// lockStatus is one run lock (or a run id that has none: state "free"),
// with its run id's history.
type lockStatus struct {
	RunID            string  `json:"run_id"`
	Key              string  `json:"key"`
	LockFile         string  `json:"lock_file"`
	State            string  `json:"state"`        // held | stale | torn | unreadable | free
	StaleReason      string  `json:"stale_reason"` // expired | holder dead | pid reused | corrupt | ""
	Liveness         string  `json:"liveness"`     // alive | dead | pid reused | unknown; "" when free
	Pid              int     `json:"pid"`
	Host             string  `json:"host"`
	Command          string  `json:"command"`
	LockID           string  `json:"lock_id"`
	FencingToken     uint64  `json:"fencing_token"`
	CreatedAt        float64 `json:"created_at"`
	ExpiresAt        float64 `json:"expires_at"`
	AgeSeconds       float64 `json:"age_seconds"`
	ExpiresInSeconds float64 `json:"expires_in_seconds"` // negative once expired
	// Tree: what the holder's tree file says of its command's process tree
	// (running | ended | unknown | none: no tree file on this host).
	Tree string `json:"tree"`
	// Holder is "holder dead, command still running" when the holder is
	// gone but its command's tree holds the lock, else "".
	Holder    string `json:"holder"`
	Pids      []int  `json:"pids"`       // that tree's surviving processes; [] when none or unknown
	PidsKnown bool   `json:"pids_known"` // false when /proc could not tell
	Error     string `json:"error"`
	// Mode is exclusive for a run lock, max or shared for a slot of a
	// semaphore or shared lock (run_id is then the user's run id); Slot is
	// the slot (-1 for exclusive), Max the semaphore's size (0 otherwise).
	Mode string `json:"mode"`
	Slot int    `json:"slot"`
	Max  int    `json:"max"`
	historyStatus
}

type leftoverStatus struct {
	Path       string  `json:"path"`
	Kind       string  `json:"kind"` // stale | temp
	RunID      string  `json:"run_id"`
	Key        string  `json:"key"`
	Since      float64 `json:"since"`
	AgeSeconds float64 `json:"age_seconds"`
	Size       int64   `json:"size"`
}

type scopeStatus struct {
	File        string       `json:"file"`
	Allocations []scope.Node `json:"allocations"`
}

// gatherStatus reads the lock directory and the scope registry (none for
// scopeFile ""). What could not be read goes to Errors; the rest is still
// reported.
func gatherStatus(locker *filelock.RunLocker, runIDs []string, scopeFile string) *statusReport {
	now := time.Now()
	st := &statusReport{Dir: locker.Dir, Now: locks.Epoch(now), Locks: []lockStatus{}, Leftovers: []leftoverStatus{}, Errors: []string{}, named: runIDs}
	ids := withSlotIDs(locker, runIDs) // and their slots (sem_status.go)
	rep, err := locker.Inspect(ids...) // only these run ids' files, when named
	if err != nil {
		st.Errors = append(st.Errors, err.Error())
		rep = &filelock.DirReport{}
	}
	for _, l := range rep.Locks {
		for _, id := range ids {
			if l.Payload.RunID == "" && locks.Key(id) == l.Key {
				l.Payload.RunID = id // unparseable: named by the run id asked about
			}
		}
		st.Locks = append(st.Locks, newLockStatus(l, now))
		if l.State == filelock.StateUnreadable {
			st.Errors = append(st.Errors, l.Err.Error())
		}
	}
	for _, l := range rep.Leftovers {
		st.Leftovers = append(st.Leftovers, leftoverStatus{Path: l.Path, Kind: string(l.Kind), RunID: baseRunID(l.RunID),
			Key: l.Key, Since: locks.Epoch(l.Since), AgeSeconds: seconds(l.Age(now)), Size: l.Size})
	}
	st.Semaphores = semaphores(st.Locks, func(runID string) (int, bool) {
		mode, max, _, found, err := locker.SlotsOf(runID)
		return max, err == nil && found && mode == locks.ModeMax
	}, locker.WaitersOf)
	// Each lock's history; a named run id without a lock, or one with a
	// history and no lock, is free (history_status.go).
	addHistory(st, fileHistories(locker.Dir, st), func(id string) lockStatus {
		return lockStatus{RunID: id, Key: locks.Key(id), LockFile: locker.LockPath(id), State: "free", Tree: "none", Pids: []int{}, Mode: "exclusive", Slot: -1}
	})
	if len(runIDs) == 0 && scopeFile != "" {
		st.Scopes = gatherScopes(scopeFile, st)
	}
	return st
}

// newLockStatus is l as status shows it; a slot's derived run id is the
// user's run id plus the slot it is.
func newLockStatus(l filelock.LockInfo, now time.Time) lockStatus {
	p := l.Payload
	ls := lockStatus{
		RunID: p.RunID, Key: l.Key, LockFile: l.Path, State: string(l.State),
		StaleReason: string(l.StaleReason), Liveness: string(l.Liveness),
		Pid: p.Pid, Host: p.Host, Command: p.Command, LockID: p.LockID, FencingToken: p.FencingToken,
		CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt,
		Tree: l.Tree.String(), Pids: []int{}, PidsKnown: l.PidsKnown,
	}
	if l.Orphaned {
		ls.Holder = locks.OrphanedText
		if l.Pids != nil {
			ls.Pids = l.Pids
		}
	}
	if p.CreatedAt > 0 {
		ls.AgeSeconds = seconds(now.Sub(p.Created()))
	}
	if p.ExpiresAt > 0 {
		ls.ExpiresInSeconds = seconds(p.Expires().Sub(now))
	}
	if l.Err != nil {
		ls.Error = l.Err.Error()
	}
	markSlot(&ls)
	return ls
}

// gatherScopes reads the scope registry (under its shared flock, bounded).
func gatherScopes(path string, st *statusReport) *scopeStatus {
	nodes, err := (&scope.Registry{Path: path}).Status(context.Background()) // none on an error
	if err != nil {
		st.Errors = append(st.Errors, err.Error())
	}
	return &scopeStatus{File: path, Allocations: append([]scope.Node{}, nodes...)} // [] for none, never null
}

// seconds rounds to milliseconds: enough for scripts, stable to read.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

// writeStatusTable prints the human view: aligned columns, relative times.
func writeStatusTable(w io.Writer, st *statusReport) {
	if len(st.Locks) == 0 {
		fmt.Fprintf(w, "no run locks in %s\n", st.Dir)
	} else {
		t := newTable(w, "RUN ID", "STATE", "PID", "HOST", "HOLDER", "ACQUIRED", "EXPIRES", "TOKEN", "LAST RESULT", "LAST SUCCESS", "COMMAND")
		for _, l := range st.Locks {
			t.row(lockRow(l, st.Now)...)
		}
		t.Flush()
	}
	writeSemaphoreTable(w, st.Semaphores)
	if len(st.Leftovers) > 0 {
		fmt.Fprintf(w, "\nwaiting for gc in %s (%d):\n", st.Dir, len(st.Leftovers))
		t := newTable(w, "  FILE", "KIND", "RUN ID", "SINCE")
		for _, l := range st.Leftovers {
			t.row("  "+filepath.Base(l.Path), l.Kind, cmp.Or(l.RunID, "-"), ago(l.AgeSeconds))
		}
		t.Flush()
	}
	if st.Scopes != nil && len(st.Scopes.Allocations) > 0 {
		fmt.Fprintln(w)
		writeScopeTable(w, st.Scopes, "  ")
	}
	writeHistory(w, st)
}

// writeScopeTable prints the registry's delegation tree, indent before
// each row.
func writeScopeTable(w io.Writer, ss *scopeStatus, indent string) {
	fmt.Fprintf(w, "scopes (%s):\n", ss.File)
	t := newTable(w, indent+"NAME", "PID", "HOLDER", "EFFECTIVE WRITE SCOPE", "READ")
	for _, n := range ss.Allocations {
		scopeRows(t, n, indent)
	}
	t.Flush()
}

func lockRow(l lockStatus, now float64) []string {
	runID := slotLabel(l)
	if l.RunID == "" {
		runID = "? " + l.Key[:12] // unparseable: the file name is all there is
	}
	state := l.State
	if l.StaleReason != "" {
		state += " (" + l.StaleReason + ")"
	}
	if l.Holder != "" {
		state += " (" + l.Holder + ": " + locks.PidsText(l.Pids, l.PidsKnown) + ")"
	}
	result, success := lastColumns(l.historyStatus, now)
	if l.State == "free" || l.State == "unreadable" || (l.Pid == 0 && l.LockID == "") {
		return []string{runID, state, "-", "-", "-", "-", "-", "-", result, success, cmp.Or(l.Error, "-")}
	}
	token := "-"
	if l.FencingToken > 0 {
		token = fmt.Sprint(l.FencingToken)
	}
	acquired := "-"
	if l.CreatedAt > 0 {
		acquired = ago(l.AgeSeconds)
	}
	return []string{runID, state, fmt.Sprint(l.Pid), cmp.Or(l.Host, "-"), l.Liveness,
		acquired, expiresIn(l.ExpiresInSeconds), token, result, success, cmp.Or(l.Command, "-")}
}

// scopeRows adds n and its delegates, each level indented under its
// parent and marked "└ "; indent is n's own.
func scopeRows(t table, n scope.Node, indent string) {
	holder := "dead"
	if n.Alive {
		holder = "alive"
	}
	var reads []string
	for _, s := range n.Allow {
		if sc, err := scope.ParseSpec(s); err == nil && sc.Mode == scope.Read {
			reads = append(reads, s)
		}
	}
	t.row(indent+n.Name, fmt.Sprint(n.PID), holder, n.Effective.String(), cmp.Or(strings.Join(slices.Sorted(slices.Values(reads)), ", "), "-"))
	for _, child := range n.Children {
		scopeRows(t, child, strings.ReplaceAll(indent, "└ ", "  ")+"└ ")
	}
}

func ago(sec float64) string { return shortDuration(sec) + " ago" }

func expiresIn(sec float64) string {
	if sec < 0 {
		return "expired " + ago(-sec)
	}
	return "in " + shortDuration(sec)
}

// shortDuration renders seconds the way a person reads an age: 45s, 3m12s,
// 2h5m, 3d4h.
func shortDuration(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
