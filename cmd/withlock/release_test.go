package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/withlock/withlock/locks"
)

// fakeHeld is a heldLock whose Release returns err after block closes.
type fakeHeld struct {
	err      error
	block    chan struct{}
	released chan struct{}
}

func (f *fakeHeld) Env() []string                     { return nil }
func (f *fakeHeld) Heartbeat() (<-chan error, func()) { return nil, func() {} }
func (f *fakeHeld) Release() error {
	if f.block != nil {
		<-f.block
	}
	close(f.released)
	return f.err
}

func newFakeHeld(err error, block chan struct{}) *fakeHeld {
	return &fakeHeld{err: err, block: block, released: make(chan struct{})}
}

// releaseBounded waits for the release and reports a failure, stays quiet
// on success and on a lock already lost, and gives up at its bound on a
// release that hangs.
func TestReleaseBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // in the log; "" for nothing
	}{
		{"released", nil, ""},
		{"lost", fmt.Errorf("run x: %w", locks.ErrLost), ""},
		{"failed", errors.New("unlink /d/x.lock: read-only file system"), "lock not released; it expires with its TTL"},
	} {
		var out bytes.Buffer
		f := newFakeHeld(tc.err, nil)
		ok := releaseBounded(zerolog.New(&out), "x", f, func() { t.Errorf("%s: stuck", tc.name) })
		if ok != (tc.err == nil) {
			t.Errorf("%s: releaseBounded = %v", tc.name, ok)
		}
		select {
		case <-f.released:
		default:
			t.Fatalf("%s: returned before the release ran", tc.name)
		}
		if got := out.String(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: logged %q, want %q", tc.name, got, tc.want)
		}
	}

	defer func(b time.Duration) { releaseBound = b }(releaseBound)
	releaseBound = 50 * time.Millisecond
	var out bytes.Buffer
	block := make(chan struct{})
	start := time.Now()
	var stuckAt time.Duration
	// In withlock onStuck ends the process; here it lets the release go.
	releaseBounded(zerolog.New(&out), "x", newFakeHeld(nil, block), func() {
		stuckAt = time.Since(start)
		close(block)
	})
	if stuckAt == 0 {
		t.Fatalf("a hanging release never called onStuck")
	}
	if stuckAt < releaseBound {
		t.Errorf("onStuck ran after %v, before the %v bound", stuckAt, releaseBound)
	}
	if !strings.Contains(out.String(), "lock release timed out") {
		t.Errorf("hanging release logged %q", out.String())
	}
}

// A release slower than a moment but inside the bound is waited for with
// the timer, and its failure still reported.
func TestReleaseBoundedWaitsForASlowRelease(t *testing.T) {
	var out bytes.Buffer
	block := make(chan struct{})
	f := newFakeHeld(errors.New("unlink /d/x.lock: input/output error"), block)
	returned := make(chan struct{})
	go func() {
		releaseBounded(zerolog.New(&out), "x", f, func() { t.Error("a release inside the bound was called stuck") })
		close(returned)
	}()
	select {
	case <-returned:
		t.Fatal("returned while the release was still running")
	case <-time.After(20 * time.Millisecond):
	}
	close(block)
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("did not return once the release finished")
	}
	if !strings.Contains(out.String(), "input/output error") {
		t.Errorf("logged %q, want the release's error", out.String())
	}
}

// seqHeld is a heldLock whose Releases return errs in turn.
type seqHeld struct {
	errs  []error
	calls int
}

func (s *seqHeld) Env() []string                     { return nil }
func (s *seqHeld) Heartbeat() (<-chan error, func()) { return nil, func() {} }
func (s *seqHeld) Release() error {
	s.calls++
	if s.calls > len(s.errs) {
		return errors.New("released once too often")
	}
	return s.errs[s.calls-1]
}

// A release out of descriptors runs again once the reserve is handed back
// (it changed nothing); any other failure is logged, not retried.
func TestReleaseBoundedRetriesOutOfDescriptors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errs  []error
		calls int
		log   string
	}{
		{"EMFILE, then released", []error{&fs.PathError{Op: "open", Path: "/d/x.guard", Err: syscall.EMFILE}, nil}, 2, ""},
		{"ENFILE, then released", []error{fmt.Errorf("guard: %w", syscall.ENFILE), nil}, 2, ""},
		{"EMFILE twice", []error{syscall.EMFILE, syscall.EMFILE}, 2, "lock not released"},
		{"read-only filesystem", []error{syscall.EROFS}, 1, "lock not released"},
		{"released", []error{nil}, 1, ""},
	} {
		var out bytes.Buffer
		s := &seqHeld{errs: tc.errs}
		releaseBounded(zerolog.New(&out), "x", s, func() { t.Errorf("%s: stuck", tc.name) })
		if s.calls != tc.calls {
			t.Errorf("%s: %d releases, want %d", tc.name, s.calls, tc.calls)
		}
		if got := out.String(); (tc.log == "") != (got == "") || !strings.Contains(got, tc.log) {
			t.Errorf("%s: logged %q, want %q", tc.name, got, tc.log)
		}
	}
}
