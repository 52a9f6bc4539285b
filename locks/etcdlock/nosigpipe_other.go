//go:build etcd && !linux

package etcdlock

import "google.golang.org/grpc"

// noSigPipeDialer is the default dialer off Linux (withlock runs on Linux
// only; this keeps the package building).
func noSigPipeDialer() []grpc.DialOption { return nil }
