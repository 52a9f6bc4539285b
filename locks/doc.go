// Package locks is what withlock's run-lock backends share, and all that
// the command line needs to know of a lock whichever backend holds it:
//
//   - the errors a run lock returns, matched with errors.Is: ErrHeld (and
//     HeldError, SlotsHeldError), ErrUnavailable, ErrLost, ErrModeMismatch
//     (MismatchError), ErrInvalid (InvalidError): errors.go
//   - the bounds of SPEC §3 on what a caller asks for: a TTL (ResolveTTL,
//     DefaultTTL), a run id (CheckRunID, CheckSlotRunID); and the names
//     derived from a run id: its key (Key), its slots (SlotRunID,
//     ParseSlotRunID, SemMode, MaxSlots): bounds.go
//   - the record a holder writes (Payload, the seed's schema and ours) and
//     what a reader knows of a holder (Holder, Describe): payload.go
//
// The backends are its subpackages, and neither imports the other:
// filelock, the run lock in a local directory (the default), and etcdlock,
// the run lock in an etcd cluster (build tag etcd). Beside them, scope is
// the scope registry (in the file backend's directory) and history the
// run history both backends keep.
package locks
