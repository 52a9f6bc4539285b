//go:build etcd

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/withlock/withlock/locks"
	"github.com/withlock/withlock/locks/etcdlock"
)

// This file is withlock-etcd's: the run lock in an etcd cluster (SPEC §6,
// package locks/etcdlock). The default build execs this binary instead
// (backend_etcd_exec.go).

func init() {
	backends["etcd"] = newEtcdBackend
	// Set by the default build when it exec'd us; the child must not see it.
	os.Unsetenv(execMarkerEnv)
}

func newEtcdBackend(c *cli.Context, log zerolog.Logger, command string, onWait func(*locks.Holder, time.Duration)) (backend, error) {
	l, err := etcdLocker(c, log)
	if err != nil {
		return nil, err
	}
	opts, err := parseSuperviseOptions(c)
	if err != nil {
		return nil, err
	}
	if opts.killOnLost {
		// The child must be gone before the lease can run out on the
		// server: the lock presumes a silent lease lost a grace earlier.
		l.Grace = opts.grace
	}
	l.Command = command
	l.OnWait = onWait
	return etcdBackend{l}, nil
}

// etcdBackend adapts etcdlock.Locker to the run command.
type etcdBackend struct{ l *etcdlock.Locker }

func (b etcdBackend) Acquire(ctx context.Context, runID string, wait time.Duration) (heldLock, error) {
	lock, err := b.l.Acquire(ctx, runID, wait)
	if err != nil {
		return nil, err
	}
	return lock, nil
}

// etcdLocker reads the etcd flags and credentials.
func etcdLocker(c *cli.Context, log zerolog.Logger) (*etcdlock.Locker, error) {
	var endpoints []string
	for _, ep := range strings.Split(c.String("endpoints"), ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			endpoints = append(endpoints, ep)
		}
	}
	if len(endpoints) == 0 {
		return nil, usageError("--backend etcd needs --endpoints URL[,URL...] (or $WITHLOCK_ETCD_ENDPOINTS)")
	}
	if c.String("etcd-prefix") == "" {
		return nil, usageError("--etcd-prefix must not be empty")
	}
	ttl, err := locks.ResolveTTL(c.Duration("ttl"), os.Getenv)
	if err != nil {
		return nil, usageError("%v", err)
	}
	user, password := os.Getenv(etcdUsernameEnv), os.Getenv(etcdPasswordEnv)
	if (user == "") != (password == "") {
		return nil, usageError("etcd credentials need both $%s and $%s", etcdUsernameEnv, etcdPasswordEnv)
	}
	tlsCfg, err := etcdTLS(c.String("etcd-cacert"), c.String("etcd-cert"), c.String("etcd-key"))
	if err != nil {
		return nil, err
	}
	return &etcdlock.Locker{
		Endpoints:   endpoints,
		Prefix:      c.String("etcd-prefix"),
		TTL:         ttl,
		DialTimeout: c.Duration("etcd-dial-timeout"),
		TLS:         tlsCfg,
		Username:    user,
		Password:    password,
		Log:         log,
	}, nil
}

// etcdTLS builds the TLS configuration of the --etcd-* files; nil when none
// is given (https:// endpoints then use the system's CAs).
func etcdTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	if (certFile == "") != (keyFile == "") {
		return nil, usageError("--etcd-cert and --etcd-key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, exitWith(exitCantCreate, fmt.Errorf("--etcd-cacert: %w", err))
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, exitWith(exitCantCreate, fmt.Errorf("--etcd-cacert %s: no PEM certificate in it", caFile))
		}
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, exitWith(exitCantCreate, fmt.Errorf("--etcd-cert %s, --etcd-key %s: %w", certFile, keyFile, err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// etcdStatus is `withlock status --backend etcd [RUN_ID...]`: the run locks
// held in etcd (only those RUN_IDs, a free one shown as free), as a table or
// as JSON with --json. 73 when etcd cannot be read.
func etcdStatus(c *cli.Context) error {
	l, err := etcdLocker(c, zerolog.Nop())
	if err != nil {
		return err
	}
	owners, err := l.Status(context.Background())
	if err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("status: %w", err))
	}
	if c.NArg() > 0 {
		owners = onlyRunIDs(owners, c.Args().Slice())
	}
	if c.Bool("json") {
		return writeEtcdStatusJSON(c, owners)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "RUN ID\tHOLDER\tTOKEN\tLEASE LEFT\tWAITING")
	now := time.Now()
	for _, o := range owners {
		if o.Key == "" {
			fmt.Fprintf(w, "%s\tfree\t-\t-\t0\n", o.RunID)
			continue
		}
		left := "?"
		if o.TTL >= 0 {
			left = o.TTL.String()
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\n", o.RunID, o.Describe(now), o.FencingToken, left, o.Waiters)
	}
	return w.Flush()
}

// onlyRunIDs keeps the owners of runIDs, in that order; a run id nobody
// holds gets an Owner without a key (free).
func onlyRunIDs(owners []*etcdlock.Owner, runIDs []string) []*etcdlock.Owner {
	byRun := map[string]*etcdlock.Owner{}
	for _, o := range owners {
		byRun[o.RunID] = o
	}
	out := make([]*etcdlock.Owner, 0, len(runIDs))
	for _, id := range runIDs {
		o := byRun[id]
		if o == nil {
			o = &etcdlock.Owner{RunID: id, TTL: -1}
		}
		out = append(out, o)
	}
	return out
}

// etcdStatusEntry is one run lock in `status --backend etcd --json`.
type etcdStatusEntry struct {
	RunID        string  `json:"run_id"`
	Held         bool    `json:"held"`
	Key          string  `json:"key"`
	Lease        string  `json:"lease"`
	FencingToken int64   `json:"fencing_token"`
	Pid          int     `json:"pid,omitempty"`
	Host         string  `json:"host,omitempty"`
	Command      string  `json:"command,omitempty"`
	CreatedAt    float64 `json:"created_at,omitempty"`
	// Foreign: the key carries no holder information (etcdctl lock).
	Foreign    bool    `json:"foreign"`
	TTLSeconds float64 `json:"ttl_seconds"` // -1: unknown
	Waiters    int     `json:"waiters"`
}

func writeEtcdStatusJSON(c *cli.Context, owners []*etcdlock.Owner) error {
	entries := make([]etcdStatusEntry, 0, len(owners))
	for _, o := range owners {
		e := etcdStatusEntry{RunID: o.RunID, TTLSeconds: -1}
		if o.Key != "" {
			e.Held, e.Key, e.Lease, e.FencingToken = true, o.Key, fmt.Sprintf("%x", int64(o.Lease)), o.FencingToken
			e.Foreign, e.Waiters = o.Holder == nil, o.Waiters
		}
		if o.TTL >= 0 {
			e.TTLSeconds = o.TTL.Seconds()
		}
		if h := o.Holder; h != nil {
			e.Pid, e.Host, e.Command, e.CreatedAt = h.Pid, h.Host, h.Command, h.CreatedAt
		}
		entries = append(entries, e)
	}
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(entries)
}

// etcdBreak is `withlock break --backend etcd RUN_ID`, with the file
// break's flags and exit statuses. An etcd lock is never stale — its lease
// frees it when the holder dies — so without --force (or --signal, which a
// remote holder cannot receive: revoking the lease is how a withlock holder
// is told) a held lock is refused with 75. With them the holder's lease is
// revoked: a withlock holder tears its command down at once and exits 76,
// and the next waiter runs. No lock is 0.
func etcdBreak(c *cli.Context, runID string) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	l, err := etcdLocker(c, log)
	if err != nil {
		return err
	}
	say := func(format string, args ...any) {
		if !c.Bool("quiet") {
			fmt.Fprintf(c.App.Writer, format+"\n", args...)
		}
	}
	ctx := context.Background()
	o, err := l.Owner(ctx, runID)
	switch {
	case err != nil:
		return exitWith(exitCantCreate, fmt.Errorf("break %q: %w", runID, err))
	case o == nil:
		say("no lock for run %q in etcd", runID)
		return nil
	case !c.Bool("force") && !c.Bool("signal"):
		return exitWith(exitTempFail, fmt.Errorf("break: run %q is held by %s; its lease keeps the lock while the holder lives and frees it when the holder dies; "+
			"--force revokes the lease (a withlock holder stops its command and exits 76)", runID, o.Describe(time.Now())))
	}
	if err := l.Revoke(ctx, o); err != nil {
		return exitWith(exitCantCreate, fmt.Errorf("break %q: %w", runID, err))
	}
	say("revoked the etcd lease of run %q (was %s, lease %x)", runID, o.Describe(time.Now()), int64(o.Lease))
	return nil
}
