//go:build etcd

package etcdlock

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/withlock/withlock/locks"
)

// maxCommand caps the command line stored in a key's value.
const maxCommand = 1024

// holderValue is the JSON value of a contender's key: the payload of a
// lock file, so a reader of lock files reads it too, and the mode.
type holderValue struct {
	locks.Payload
	// Mode is "shared" for a shared holder (run --shared); an exclusive
	// holder leaves it out, and a key without it is exclusive.
	Mode string `json:"mode,omitempty"`
}

const modeShared = "shared"

func (l *Locker) holderValue(runID string, lease clientv3.LeaseID, shared bool) string {
	host, _ := os.Hostname()
	v := holderValue{Payload: locks.Payload{
		RunID:     runID,
		LockID:    leaseHex(lease),
		Pid:       os.Getpid(),
		Host:      host,
		Command:   l.Command[:min(len(l.Command), maxCommand)],
		CreatedAt: locks.Epoch(time.Now()),
	}}
	if shared {
		v.Mode = modeShared
	}
	data, _ := json.Marshal(v) // plain fields: cannot fail
	return string(data)
}

func leaseHex(id clientv3.LeaseID) string { return strconv.FormatInt(int64(id), 16) }

// Owner is the key that holds a run lock, as found in the cluster.
type Owner struct {
	RunID        string
	Key          string
	Lease        clientv3.LeaseID
	FencingToken int64 // the key's create revision
	// Holder is what withlock wrote into the key; nil when the key has no
	// holder information (etcdctl lock, another client of the recipe).
	Holder *locks.Holder
	// Shared: a shared holder's key (run --shared), which runs beside the
	// other shared keys queued before any exclusive one.
	Shared bool
	// Waiters is how many other contenders are queued (status only).
	Waiters int
	// TTL is what is left of the owner's lease (status only; -1 unknown).
	TTL time.Duration
}

// ownerFromKV reads a contender's key.
func ownerFromKV(runID string, kv *mvccpb.KeyValue) *Owner {
	o := &Owner{RunID: runID, Key: string(kv.Key), Lease: clientv3.LeaseID(kv.Lease), FencingToken: kv.CreateRevision, TTL: -1}
	var v holderValue
	parsed := len(kv.Value) > 0 && json.Unmarshal(kv.Value, &v) == nil
	o.Shared = parsed && v.Mode == modeShared
	if parsed && v.Pid > 0 {
		v.FencingToken = uint64(kv.CreateRevision)
		o.Holder = &locks.Holder{Path: o.Key, Payload: v.Payload}
	}
	return o
}

// Describe says, in one phrase, who holds the lock.
func (o *Owner) Describe(now time.Time) string {
	if o.Holder != nil {
		return o.Holder.Describe(now)
	}
	return fmt.Sprintf("another etcd client (key %s, lease %s; it left no holder information — etcdctl lock?)", o.Key, leaseHex(o.Lease))
}

// heldError is the result of a wait that ran out: a *locks.HeldError when
// the owner is a withlock, else an *OtherClientError; both match
// locks.ErrHeld.
func heldError(runID string, o *Owner, now time.Time) error {
	if o != nil && o.Holder != nil {
		return &locks.HeldError{RunID: runID, Holder: *o.Holder, At: now}
	}
	return &OtherClientError{RunID: runID, Owner: o}
}

// OtherClientError says the lock is held by a client that left no holder
// information in its key, such as `etcdctl lock`. It matches locks.ErrHeld.
type OtherClientError struct {
	RunID string
	Owner *Owner // nil: the owner let go while we looked
}

func (e *OtherClientError) Error() string {
	if e.Owner == nil {
		return fmt.Sprintf("run %q is locked (its holder let go just as the wait ended)", e.RunID)
	}
	return fmt.Sprintf("run %q is locked by %s", e.RunID, e.Owner.Describe(time.Now()))
}

func (e *OtherClientError) Unwrap() error { return locks.ErrHeld }

// splitKey takes a contender's key apart: run id and lease. ok is false for
// keys that are not <prefix><escaped run id>/<hex lease>.
func splitKey(prefix, key string) (runID string, lease clientv3.LeaseID, ok bool) {
	rest, found := strings.CutPrefix(key, prefix)
	i := strings.LastIndexByte(rest, '/') // -1 (rest[0:]) when there is none
	id, err := strconv.ParseInt(rest[i+1:], 16, 64)
	if !found || i <= 0 || err != nil {
		return "", 0, false
	}
	return unescapeRunID(rest[:i]), clientv3.LeaseID(id), true
}
