package reaper

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/withlock/withlock/internal/proc"
)

// Descendants returns every live process below pid (children, their
// children, …), found through /proc. Zombies are included: they are still
// somebody's to reap. Processes that appear or vanish during the walk may be
// missed or reported; callers that must see none left call it again.
func Descendants(pid int) ([]Process, error) {
	ps, err := proc.Descendants(pid)
	if err != nil {
		return nil, fmt.Errorf("descendants of %d: %w", pid, err)
	}
	out := make([]Process, len(ps))
	for i, p := range ps {
		out[i] = fromProc(p)
	}
	return out, nil
}

// ReadProcess reads pid, parent pid and start time from /proc/<pid>/stat.
// A process that no longer exists is an error matching ErrGone.
func ReadProcess(pid int) (Process, error) {
	p, err := proc.Read(pid)
	if errors.Is(err, fs.ErrNotExist) {
		return Process{}, fmt.Errorf("%w: %w", ErrGone, err)
	}
	if err != nil {
		return Process{}, err
	}
	return fromProc(p), nil
}

func fromProc(p proc.Process) Process {
	return Process{Pid: p.Pid, PPid: p.PPid, StartTime: p.StartTime}
}
