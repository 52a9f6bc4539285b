//go:build etcd

package etcdlock

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// probeTimeout bounds each endpoint's probe.
const probeTimeout = time.Second

// explain adds to a timed-out request what is wrong with each endpoint
// (refused, unresolvable, TLS handshake failed): gRPC waits for a
// connection until the deadline and then says only "context deadline
// exceeded". Other errors are returned as they are.
func (l *Locker) explain(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) && status.Code(err) != codes.DeadlineExceeded {
		return err
	}
	var problems []error
	for _, ep := range l.Endpoints {
		problems = append(problems, probe(ep, l.TLS))
	}
	// errors.Join drops the nils of the endpoints that work.
	problem := errors.Join(problems...)
	if problem == nil {
		return err
	}
	return fmt.Errorf("%w: %w", err, problem)
}

// probe connects to one endpoint as the client would, TLS handshake
// included, and reports why that fails; nil when it works.
func probe(endpoint string, cfg *tls.Config) error {
	network, addr, secure := splitEndpoint(endpoint, cfg != nil)
	conn, err := net.DialTimeout(network, addr, probeTimeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !secure {
		return nil
	}
	tcfg := cmp.Or(cfg, &tls.Config{}).Clone()
	if tcfg.ServerName == "" && network == "tcp" {
		tcfg.ServerName, _, _ = net.SplitHostPort(addr)
	}
	tcfg.NextProtos = []string{"h2"}
	tc := tls.Client(conn, tcfg)
	tc.SetDeadline(time.Now().Add(probeTimeout))
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("tls handshake with %s: %w", addr, err)
	}
	// With TLS 1.3 a refused client certificate shows up as an alert after
	// the handshake; a server waiting for our first bytes is fine (the read
	// runs into its deadline).
	tc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var b [1]byte
	if _, err := tc.Read(b[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("tls with %s: %w", addr, err)
	}
	return nil
}

// splitEndpoint reads an endpoint the way the etcd client does:
// http(s)://host:port, unix(s)://path or unix(s):path, or a bare host:port
// (TLS when a TLS configuration is given).
func splitEndpoint(ep string, tlsDefault bool) (network, addr string, secure bool) {
	scheme, rest, found := strings.Cut(ep, "://")
	if !found {
		scheme, rest, found = strings.Cut(ep, ":")
	}
	switch {
	case found && (scheme == "unix" || scheme == "unixs"):
		return "unix", rest, scheme == "unixs"
	case found && (scheme == "http" || scheme == "https"):
		host, _, _ := strings.Cut(rest, "/")
		return "tcp", host, scheme == "https"
	}
	return "tcp", ep, tlsDefault
}
