//go:build etcd

package etcdlock

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/withlock/withlock/locks"
)

// Defaults of a Locker's zero fields.
const (
	DefaultPrefix      = "/withlock/run/"
	DefaultTTL         = 30 * time.Second
	DefaultDialTimeout = 5 * time.Second
)

// releaseBound caps the unlock and revoke of a release: past it the lease's
// TTL frees the lock anyway.
const releaseBound = 2 * time.Second

// lostReleaseBound caps the release of a lock already reported lost.
const lostReleaseBound = 500 * time.Millisecond

// Locker takes run locks in one etcd cluster. Set the fields, then call
// Acquire; a Locker may be used for several acquisitions but not
// concurrently.
type Locker struct {
	// Endpoints: at least one; the caller checks (withlock refuses
	// --backend etcd without --endpoints).
	Endpoints []string
	Prefix    string        // key prefix, DefaultPrefix when empty
	TTL       time.Duration // lease TTL, rounded up to whole seconds; DefaultTTL when 0
	// DialTimeout bounds each attempt to reach the cluster; unreachable
	// clusters are retried within the wait, or for DialTimeout when there
	// is no wait.
	DialTimeout time.Duration

	TLS                *tls.Config // nil: plain connections unless an endpoint says https
	Username, Password string

	// Grace is how long the holder takes to stop its command once a loss
	// is reported (TERM → grace → KILL). A lease whose keepalive answers
	// stop is presumed lost this much earlier, so that the command is gone
	// before the server can give the lock to another host. 0 when a loss
	// only needs reporting.
	Grace time.Duration

	Command string // the child's command line, recorded for status
	Log     zerolog.Logger
	// OnWait, if set, is called while the lock is held by someone else,
	// about once a second, with the holder and how long we have waited.
	OnWait func(h *locks.Holder, waited time.Duration)
}

func (l *Locker) prefix() string { return cmp.Or(l.Prefix, DefaultPrefix) }

// ttlSeconds is the lease TTL asked of the server, in whole seconds. The
// server may raise it to its minimum (about 1.5 election timeouts); the
// granted TTL is what loss detection uses.
func (l *Locker) ttlSeconds() int64 {
	return max(1, int64(math.Ceil(cmp.Or(max(l.TTL, 0), DefaultTTL).Seconds())))
}

func (l *Locker) dialTimeout() time.Duration {
	return cmp.Or(max(l.DialTimeout, 0), DefaultDialTimeout)
}

// newClient makes a client. It does not wait for a connection (the first
// request does, within its context) unless a user name is set: then it
// fetches a token, within DialTimeout.
func (l *Locker) newClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   l.Endpoints,
		DialTimeout: l.dialTimeout(),
		TLS:         l.TLS,
		Username:    l.Username,
		Password:    l.Password,
		// The client's own logs are JSON on stderr; withlock reports the
		// errors that matter itself.
		Logger: zap.NewNop(),
		// Keep the connection alive so a dead peer shows up between
		// lease keepalives too.
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		// Socket writes never raise SIGPIPE (nosigpipe_linux.go).
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(dialNoSigPipe)},
	})
}

// describe names the endpoints in an error about reaching the cluster.
func (l *Locker) describe(err error) error {
	return fmt.Errorf("etcd at %s: %w", strings.Join(l.Endpoints, ","), err)
}

// MutexName is the concurrency.Mutex name of runID: <prefix><escaped run id>.
// `etcdctl lock` with this name takes the same lock.
func (l *Locker) MutexName(runID string) string {
	return l.prefix() + escapeRunID(runID)
}

// queuePrefix is the range of runID's mutex: its contenders' keys,
// <mutex name>/<lease in hex>.
func (l *Locker) queuePrefix(runID string) string { return l.MutexName(runID) + "/" }

var (
	runIDEscaper   = strings.NewReplacer("%", "%25", "/", "%2F", "\x00", "%00")
	runIDUnescaper = strings.NewReplacer("%25", "%", "%2F", "/", "%2f", "/", "%00", "\x00")
)

// escapeRunID keeps a run id one key segment: a '/' in it would put its keys
// under another run id's mutex prefix. The NUL of a semaphore slot's derived
// run id (locks.SlotRunID) becomes %00, so its keys and the child's
// WITHLOCK_LOCK_KEY stay printable.
func escapeRunID(runID string) string { return runIDEscaper.Replace(runID) }

func unescapeRunID(s string) string { return runIDUnescaper.Replace(s) }
