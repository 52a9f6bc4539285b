//go:build etcd && linux

package etcdlock

import (
	"context"
	"errors"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// brokenPeer returns a connection from dial to a peer that has reset it
// (SO_LINGER 0 then close), after the reset has arrived.
func brokenPeer(t *testing.T, dial func(addr string) (net.Conn, error)) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.(*net.TCPConn).SetLinger(0)
	s.Close()
	// Reading sees the reset once it has arrived: ECONNRESET (or EOF).
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read from a reset peer succeeded")
	}
	return c
}

// writeUntilError writes to c until a write fails, and reports whether a
// SIGPIPE reached the subscription meanwhile.
func writeUntilError(t *testing.T, c net.Conn) (sigpipe bool, err error) {
	t.Helper()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	for i := 0; i < 100 && err == nil; i++ {
		_, err = c.Write([]byte("x"))
	}
	// A kernel SIGPIPE is raised synchronously by the failing write; the
	// runtime hands it to the subscription shortly after.
	select {
	case <-sigs:
		return true, err
	case <-time.After(500 * time.Millisecond):
		return false, err
	}
}

// TestNoSigPipeConnWrite: the etcd client's sockets fail a write to a gone
// peer with EPIPE and raise no SIGPIPE, even with SIGPIPE subscribed (as
// withlock's supervisor does). The control, a plain net.Dial socket, shows
// the same write raising one.
func TestNoSigPipeConnWrite(t *testing.T) {
	c := brokenPeer(t, func(addr string) (net.Conn, error) {
		return dialNoSigPipe(context.Background(), addr)
	})
	if _, ok := c.(*noSigPipeConn); !ok {
		t.Fatalf("dialNoSigPipe returned a %T", c)
	}
	sig, err := writeUntilError(t, c)
	if err == nil {
		t.Fatal("100 writes to a reset peer succeeded")
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("write error %v; want EPIPE or ECONNRESET", err)
	}
	if sig {
		t.Errorf("a write through dialNoSigPipe raised SIGPIPE (error %v)", err)
	}

	t.Run("control", func(t *testing.T) {
		c := brokenPeer(t, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
		sig, err := writeUntilError(t, c)
		if err == nil || !sig {
			t.Errorf("plain socket: write error %v, SIGPIPE %v; want both (else this test shows nothing)", err, sig)
		}
	})
}

// TestNoSigPipeConnUnix: unix endpoints (unix:path, unix:///abs) dial too.
func TestNoSigPipeConnUnix(t *testing.T) {
	path := t.TempDir() + "/etcd.sock"
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			s, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 5)
			n, _ := s.Read(buf)
			s.Write(buf[:n])
			s.Close()
		}
	}()
	for _, addr := range []string{"unix:" + path, "unix://" + path} {
		c, err := dialNoSigPipe(context.Background(), addr)
		if err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatalf("%s: write: %v", addr, err)
		}
		buf := make([]byte, 5)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(buf); err != nil || string(buf) != "hello" {
			t.Errorf("%s: echo %q, %v", addr, buf, err)
		}
		c.Close()
	}
}
