//go:build etcd

// Package etcdtest runs a single-member etcd server on 127.0.0.1 for tests:
// go.etcd.io/etcd/server/v3/embed, data and logs in a temp dir, free ports,
// fast elections so that leases as short as 1 s are granted.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startTimeout bounds a server start (election included).
const startTimeout = 30 * time.Second

// Server is one embedded etcd member.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT, or https:// with TLS
	Dir      string // data dir and etcd.log
	Certs    *Certs // nil without TLS

	cfg   *embed.Config
	e     *embed.Etcd
	proxy *proxy
	addr  string // where the proxy listens: the Endpoint's host:port
}

// Options configure New.
type Options struct {
	// TLS: serve clients over TLS with these certificates and require a
	// client certificate signed by their CA.
	TLS *Certs
}

// Start configures a server and starts it; it stops at the end of the test.
// The ports were free when picked, but another process can take one before
// etcd or its proxy binds it (parallel test packages do): then it starts
// again on new ports, which nobody was pointed at yet.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		s := New(t, o)
		err := s.Launch()
		if err == nil {
			return s
		}
		if !errors.Is(err, syscall.EADDRINUSE) || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("attempt %d: %v; starting again on other ports", attempt, err)
	}
}

// New picks free ports and a data dir but does not start the server, so a
// test can point a client at it first. The server stops at the end of the
// test.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Configure(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Start starts the server and waits until it serves.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.Launch(); err != nil {
		t.Fatal(err)
	}
}

// Configure is New for programs (the bench): data and logs go in dir, and
// the caller stops the server.
func Configure(dir string, o Options) (*Server, error) {
	scheme := "http"
	if o.TLS != nil {
		scheme = "https"
	}
	// Clients reach the server through a proxy on Endpoint, so Stop can
	// make it vanish at once (a graceful embed.Close drains open streams
	// for seconds, answering keepalives meanwhile).
	var addrs [3]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	addr := addrs[0]
	clientURL := url.URL{Scheme: scheme, Host: addrs[1]}
	peerURL := url.URL{Scheme: "http", Host: addrs[2]}

	cfg := embed.NewConfig()
	cfg.Name = "withlock-test"
	cfg.Dir = filepath.Join(dir, "data")
	cfg.Logger = "zap"
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Minimum lease TTL is 1.5 election timeouts: 150 ms, so 1 s leases.
	cfg.TickMs = 10
	cfg.ElectionMs = 100
	// Password checks at bcrypt's minimum cost: the default takes seconds
	// under the race detector.
	cfg.BcryptCost = 4
	if o.TLS != nil {
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile:       o.TLS.ServerCert,
			KeyFile:        o.TLS.ServerKey,
			TrustedCAFile:  o.TLS.CA,
			ClientCertAuth: true,
		}
	}
	return &Server{Endpoint: scheme + "://" + addr, Dir: dir, Certs: o.TLS, cfg: cfg, addr: addr}, nil
}

// Launch is Start for programs.
func (s *Server) Launch() error {
	e, err := embed.StartEtcd(s.cfg)
	if err != nil {
		return fmt.Errorf("start embedded etcd (log: %s): %w", s.cfg.LogOutputs[0], err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(startTimeout):
		e.Close()
		return fmt.Errorf("embedded etcd not ready after %s (log: %s)", startTimeout, s.cfg.LogOutputs[0])
	}
	p, err := newProxy(s.addr, s.cfg.ListenClientUrls[0].Host)
	if err != nil {
		e.Close()
		return fmt.Errorf("proxy for embedded etcd: %w", err)
	}
	s.e, s.proxy = e, p
	return nil
}

// Stop makes the server vanish as a crashed host would: open connections
// are reset and new ones refused at once; then the member is shut down. A
// stopped server stays stopped.
func (s *Server) Stop() {
	s.Partition()
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// Partition cuts the clients of Endpoint off as a network partition
// would — open connections reset, new ones refused — while the member runs
// on: its leases expire on its own clock, which DirectClient can watch.
func (s *Server) Partition() {
	if s.proxy != nil {
		s.proxy.kill()
		s.proxy = nil
	}
}

// Client is a client of the server, closed at the end of the test.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	return s.client(t, s.Endpoint)
}

// DirectClient is a client of the member itself, on the other side of
// Partition; closed at the end of the test.
func (s *Server) DirectClient(t testing.TB) *clientv3.Client {
	t.Helper()
	u := s.cfg.ListenClientUrls[0]
	return s.client(t, u.Scheme+"://"+u.Host)
}

func (s *Server) client(t testing.TB, endpoint string) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if s.Certs != nil {
		tlsCfg, err := s.Certs.ClientConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = tlsCfg
	}
	cl, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcd client for %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// Ctx is a context for one request of a test.
func Ctx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// freeAddr returns 127.0.0.1:PORT with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ClosedEndpoint is an endpoint where nothing listens.
func ClosedEndpoint(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// EnableAuth creates user with password and the root role and turns
// authentication on; Client then no longer works without credentials.
func EnableAuth(t testing.TB, s *Server, user, password string) {
	t.Helper()
	cl := s.Client(t)
	ctx := Ctx(t)
	if _, err := cl.UserAdd(ctx, user, password); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.UserGrantRole(ctx, user, "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
}
