package filelock

import (
	"github.com/withlock/withlock/internal/proc"
	"github.com/withlock/withlock/locks"

	"io/fs"
	"time"
)

// StaleReason says why a lock file may be reclaimed; "" means it is held.
type StaleReason string

const (
	NotStale     StaleReason = ""
	StaleExpired StaleReason = "expired"
	StaleDead    StaleReason = "holder dead"
	StaleReused  StaleReason = "pid reused"
	StaleCorrupt StaleReason = "corrupt"
	// StaleTreeEnded: the holder's command tree has ended (its tree file's
	// flock is free) and the holder is not known to be alive.
	StaleTreeEnded StaleReason = "command ended"
)

// TornGrace is how old an unparseable lock file must be before it counts as
// stale: a foreign writer may be between its O_EXCL create and its write.
const TornGrace = 2 * time.Second

// lockView is one read of a lock file.
type lockView struct {
	path     string // of the lock file
	payload  locks.Payload
	parseErr error // non-nil: empty, oversized or not the schema
	modTime  time.Time
	ino      uint64
	fi       fs.FileInfo // of the file read: its owner (nil in tests that build a view)
}

// Verdict is what the stale rules say of one read of a lock file.
type Verdict struct {
	Reason StaleReason // NotStale: held
	// Orphaned: the holder is dead (or its pid reused) but its command's
	// tree still runs — "holder dead, command still running". The lock is
	// held.
	Orphaned bool
	// Tree is what the probe of the tree file found (TreeNone when the
	// payload has none or it was not probed).
	Tree TreeState
}

// Held reports whether the lock is held.
func (v Verdict) Held() bool { return v.Reason == NotStale }

// Judge applies SPEC §3's stale rules to one read of a lock file. live
// judges a pid on this host; probe looks at a tree file (probeTree).
//   - unparseable, empty or oversized: stale once older than TornGrace;
//   - a holder on this host and boot that has a tree file (the payload
//     says "tree"): held while anything of its command's tree holds that
//     file's flock, whatever its pid and TTL say — the holder alive, or
//     dead with its command still running (Orphaned). A holder alive here
//     always holds it, so its tree is not probed. Once the flock is free
//     or the file is gone, stale (the tree ended), even before the TTL.
//     Such a holder is never reclaimed by its TTL: a stopped withlock or a
//     clock step does not free the lock while its command runs;
//   - otherwise (a foreign or older writer, another host, a tree file that
//     cannot be probed): expires_at in the past is stale; same host, boot
//     and pid namespace with the pid dead or reused (its start time
//     differs) is stale. A pid from another host, boot or namespace says
//     nothing, so only the TTL applies to it.
func Judge(v lockView, now time.Time, self Identity, live func(pid int, start uint64) proc.Liveness, probe func(path string) TreeState) Verdict {
	if v.parseErr != nil {
		if now.Sub(v.modTime) > TornGrace {
			return Verdict{Reason: StaleCorrupt}
		}
		return Verdict{}
	}
	p := v.payload
	pidKnown := sameKernelView(p, self)
	liveness := proc.Alive
	if pidKnown {
		liveness = live(p.Pid, p.PidStart)
	}
	if p.Tree && sameKernel(p, self) && v.path != "" {
		if pidKnown && liveness == proc.Alive {
			return Verdict{} // it holds its own tree file
		}
		switch t := probe(treePath(v.path, p.LockID)); t {
		case TreeRunning:
			return Verdict{Orphaned: pidKnown, Tree: t}
		case TreeEnded:
			reason := deadReason(liveness)
			if reason == NotStale {
				reason = StaleTreeEnded
			}
			return Verdict{Reason: reason, Tree: t}
		}
		// TreeUnknown: the rules of a payload without a tree.
	}
	if p.Expires().Before(now) {
		return Verdict{Reason: StaleExpired}
	}
	return Verdict{Reason: deadReason(liveness)}
}

// deadReason is the stale reason a holder's liveness gives, NotStale for
// one alive.
func deadReason(l proc.Liveness) StaleReason {
	switch l {
	case proc.Dead:
		return StaleDead
	case proc.Reused:
		return StaleReused
	}
	return NotStale
}

// sameKernelView: the payload's pid names a process we can see and check.
func sameKernelView(p locks.Payload, self Identity) bool {
	return !self.ForeignProc && sameKernel(p, self) && p.PidNS != 0 && p.PidNS == self.PidNS
}

// sameKernel: the payload was written on this host since this boot, so its
// flocks are this kernel's, whatever pid namespace it came from.
func sameKernel(p locks.Payload, self Identity) bool {
	return p.Host != "" && p.Host == self.Host &&
		p.BootID != "" && p.BootID == self.BootID
}
