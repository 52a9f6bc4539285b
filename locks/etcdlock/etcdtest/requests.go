//go:build etcd

package etcdtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// unaryMethods are the requests a client makes of its own accord; the
// streams (Watch, LeaseKeepAlive) are opened once and not counted.
var unaryMethods = map[string]bool{
	"Range": true, "Txn": true, "Put": true, "DeleteRange": true,
	"LeaseGrant": true, "LeaseRevoke": true, "LeaseTimeToLive": true,
}

// Requests is how many unary KV and lease requests (Range, Txn, Put,
// DeleteRange, LeaseGrant, LeaseRevoke, LeaseTimeToLive) the embedded
// servers of this process have been sent so far, by method: the gRPC
// server's own counters (grpc_server_started_total). A test takes it
// before and after a wait to see whether a waiter polls.
func Requests(t testing.TB) map[string]int {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("read the server's metrics: %v", err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != "grpc_server_started_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "grpc_method" && unaryMethods[lp.GetValue()] {
					out[lp.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the server's metrics have no grpc_server_started_total: cannot count requests")
	}
	return out
}

// RequestsSince is Requests less before, leaving out methods with none.
func RequestsSince(t testing.TB, before map[string]int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for m, n := range Requests(t) {
		if d := n - before[m]; d != 0 {
			out[m] = d
		}
	}
	return out
}
