//go:build etcd

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
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

// etcdStatus prints the run locks held in etcd: a table, or JSON with
// --json.
func etcdStatus(c *cli.Context) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	l, err := etcdLocker(c, log)
	if err != nil {
		return err
	}
	owners, err := l.Status(context.Background())
	if err != nil {
		return exitWith(exitCantCreate, err)
	}
	if c.Bool("json") {
		return writeEtcdStatusJSON(c, owners)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "RUN ID\tHOLDER\tTOKEN\tLEASE LEFT\tWAITING")
	now := time.Now()
	for _, o := range owners {
		left := "?"
		if o.TTL >= 0 {
			left = o.TTL.String()
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%d\n", o.RunID, o.Describe(now), o.FencingToken, left, o.Waiters)
	}
	return w.Flush()
}

// etcdStatusEntry is one run lock in `status --backend etcd --json`.
type etcdStatusEntry struct {
	RunID        string  `json:"run_id"`
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
		e := etcdStatusEntry{
			RunID: o.RunID, Key: o.Key, Lease: fmt.Sprintf("%x", int64(o.Lease)), FencingToken: o.FencingToken,
			Foreign: o.Holder == nil, TTLSeconds: -1, Waiters: o.Waiters,
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

// etcdBreak takes runID's lock away from its holder by revoking the
// holder's lease; a withlock holding it sees that at once and tears its
// child down (exit 76). Nothing to break is an error (exit 1).
func etcdBreak(c *cli.Context, runID string) error {
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	l, err := etcdLocker(c, log)
	if err != nil {
		return err
	}
	o, err := l.Break(context.Background(), runID)
	switch {
	case errors.Is(err, etcdlock.ErrNotHeld):
		return exitWith(1, fmt.Errorf("break: run %q is not locked in etcd", runID))
	case err != nil:
		return exitWith(exitCantCreate, fmt.Errorf("break: %w", err))
	}
	fmt.Fprintf(c.App.ErrWriter, "withlock: broke run %q: revoked lease %x of %s\n", runID, int64(o.Lease), o.Describe(time.Now()))
	return nil
}
