//go:build etcd

package etcdlock

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/withlock/withlock/locks"
)

// ErrNotHeld: Break found nobody holding the run id.
var ErrNotHeld = errors.New("run lock not held")

// permanent reports whether err will not go away by retrying: refused
// credentials or permissions, a malformed request. Everything else (no
// connection, no leader, a lease that expired while we waited) is retried
// within the wait.
func permanent(err error) bool {
	code := status.Code(err)
	if ee, ok := errors.AsType[rpctypes.EtcdError](err); ok {
		code = ee.Code()
	}
	return code == codes.InvalidArgument || code == codes.PermissionDenied || code == codes.Unauthenticated
}

// unavailable is the error of a lock that could not be taken because of
// err: it matches locks.ErrUnavailable, names the endpoints and, when a
// request timed out, what is wrong with each.
func (l *Locker) unavailable(err error) error {
	return fmt.Errorf("%w: %w", locks.ErrUnavailable, l.describe(l.explain(err)))
}
