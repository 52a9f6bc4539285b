//go:build etcd && linux

package etcdlock

import (
	"cmp"
	"context"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// dialNoSigPipe connects the etcd client's sockets (its gRPC dialer) so
// that their writes never raise SIGPIPE.
//
// withlock subscribes to SIGPIPE (SPEC §5: a PIPE sent to withlock is
// forwarded to the command). Once a Go program does, the runtime delivers
// every SIGPIPE to the subscription, including the one the kernel raises
// for withlock's own write to a socket whose peer is gone (a stopped etcd,
// a TLS handshake the server refused). Seen through os/signal the two are
// the same signal, so the command was killed with a PIPE nobody sent it, or
// the wait for the lock ended 141. Writing with MSG_NOSIGNAL makes such a
// write fail with EPIPE only — which gRPC handles as a broken connection —
// and leaves SIGPIPE to the signals other processes send.
func dialNoSigPipe(ctx context.Context, addr string) (net.Conn, error) {
	// etcd's resolver passes unix(s) endpoints as unix:path or
	// unix:///abs/path (TLS, for unixs, is layered above this conn).
	network, address, _ := splitEndpoint(addr, false)
	c, err := new(net.Dialer).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	// A dialed TCP or unix socket is a syscall.Conn.
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		c.Close()
		return nil, err
	}
	return &noSigPipeConn{Conn: c, raw: raw}, nil
}

// noSigPipeConn is a stream socket whose Write is send(2) with MSG_NOSIGNAL,
// through the runtime poller (deadlines and non-blocking waits as for any
// net.Conn write).
type noSigPipeConn struct {
	net.Conn
	raw syscall.RawConn
}

func (c *noSigPipeConn) Write(b []byte) (int, error) {
	written := 0
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		// A stream socket's send takes at least one byte or fails.
		for written < len(b) {
			n, err := unix.SendmsgN(int(fd), b[written:], nil, nil, unix.MSG_NOSIGNAL)
			written += max(n, 0)
			switch err {
			case nil, unix.EINTR:
			case unix.EAGAIN:
				return false // the poller waits until the socket takes more
			default:
				werr = err
				return true
			}
		}
		return true
	})
	// The poller's error, or else the send's (never both: a send that
	// fails ends the write).
	if err := cmp.Or(err, werr); err != nil {
		return written, &net.OpError{Op: "write", Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("sendmsg", err)}
	}
	return written, nil
}
