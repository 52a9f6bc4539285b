package locks

import "time"

// StaleReason says why a lock file may be reclaimed; "" means it is held.
type StaleReason string

const (
	NotStale     StaleReason = ""
	StaleExpired StaleReason = "expired"
	StaleDead    StaleReason = "holder dead"
	StaleReused  StaleReason = "pid reused"
	StaleCorrupt StaleReason = "corrupt"
)

// TornGrace is how old an unparseable lock file must be before it counts as
// stale: a foreign writer may be between its O_EXCL create and its write.
const TornGrace = 2 * time.Second

// lockView is one read of a lock file.
type lockView struct {
	payload  Payload
	parseErr error // non-nil: empty, oversized or not the schema
	modTime  time.Time
	ino      uint64
}

// Judge applies SPEC §3's stale rules to one read of a lock file:
//   - unparseable, empty or oversized: stale once older than TornGrace;
//   - expires_at in the past: stale;
//   - same host, boot and pid namespace, and the pid is dead or was reused
//     (its start time differs): stale. A pid from another host, boot or
//     namespace says nothing here, so only the TTL applies to it.
func Judge(v lockView, now time.Time, self Identity, live func(pid int, start uint64) Liveness) StaleReason {
	if v.parseErr != nil {
		if now.Sub(v.modTime) > TornGrace {
			return StaleCorrupt
		}
		return NotStale
	}
	p := v.payload
	if p.Expires().Before(now) {
		return StaleExpired
	}
	if !sameKernelView(p, self) {
		return NotStale
	}
	switch live(p.Pid, p.PidStart) {
	case Dead:
		return StaleDead
	case Reused:
		return StaleReused
	}
	return NotStale
}

// sameKernelView: the payload's pid names a process we can see and check.
func sameKernelView(p Payload, self Identity) bool {
	return p.Host != "" && p.Host == self.Host &&
		p.BootID != "" && p.BootID == self.BootID &&
		p.PidNS != 0 && p.PidNS == self.PidNS
}
