package main

import (
	"time"

	"github.com/urfave/cli/v3"
)

// The etcd backend (SPEC §6) lives in a second binary, withlock-etcd: this
// same command built with -tags etcd (backend_etcd.go). The etcd client
// (gRPC) roughly doubles start-up time and adds ~10 MiB of RSS just by being
// linked in, and the local file lock must not pay for that. The default
// build knows the etcd flags, so that it can parse a command line that asks
// for etcd, and then replaces itself with withlock-etcd
// (backend_etcd_exec.go).

// etcdBinaryName is the etcd-enabled build, found beside withlock or in PATH.
const etcdBinaryName = "withlock-etcd"

// execMarkerEnv is set when withlock execs withlock-etcd; it catches an
// etcd binary that was built without the tag (which would exec itself
// forever). withlock-etcd removes it so the child never sees it.
const execMarkerEnv = "WITHLOCK_ETCD_EXEC"

// Credentials come from the environment only: a flag would show in ps.
const (
	etcdUsernameEnv = "WITHLOCK_ETCD_USERNAME"
	etcdPasswordEnv = "WITHLOCK_ETCD_PASSWORD"
)

// etcdFlags are the flags of the etcd backend, for run, status and break.
// The file-only build hides them from the help: it only forwards them to
// withlock-etcd.
func etcdFlags() []cli.Flag {
	hidden := execBackends["etcd"]
	return []cli.Flag{
		&cli.StringFlag{Name: "endpoints", Sources: cli.EnvVars("WITHLOCK_ETCD_ENDPOINTS"), Hidden: hidden,
			Usage: "etcd endpoints, comma-separated `URLS` (--backend etcd; user and password from $" + etcdUsernameEnv + ", $" + etcdPasswordEnv + ")"},
		&cli.StringFlag{Name: "etcd-prefix", Value: "/withlock/run/", Sources: cli.EnvVars("WITHLOCK_ETCD_PREFIX"), Hidden: hidden,
			Usage: "etcd key prefix: the lock of RUN_ID is the concurrency mutex <prefix><RUN_ID>, as with etcdctl lock"},
		&cli.StringFlag{Name: "etcd-cacert", Sources: cli.EnvVars("WITHLOCK_ETCD_CACERT"), Hidden: hidden, Usage: "`FILE` of CA certificates for etcd's TLS"},
		&cli.StringFlag{Name: "etcd-cert", Sources: cli.EnvVars("WITHLOCK_ETCD_CERT"), Hidden: hidden, Usage: "client certificate `FILE` for etcd's TLS"},
		&cli.StringFlag{Name: "etcd-key", Sources: cli.EnvVars("WITHLOCK_ETCD_KEY"), Hidden: hidden, Usage: "client key `FILE` for etcd's TLS"},
		&durFlag{Name: "etcd-dial-timeout", Value: 5 * time.Second, Sources: cli.EnvVars("WITHLOCK_ETCD_DIAL_TIMEOUT"), Hidden: hidden,
			Usage: "bound of each attempt to reach etcd; an unreachable cluster is retried within --wait (at least this long), then exit 73"},
	}
}
