package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/failpoint"
)

// View says how the mounted /proc sees this process. /proc shows the pids
// of the pid namespace it was mounted in, not necessarily ours: after
// `unshare --pid --fork` without `--mount-proc`, os.Getpid() is a pid of
// the new namespace (1, 2, …) while /proc/<pid> names processes of the
// outer one. ours is true when /proc/self is our own pid, so that pids of
// our namespace can be judged by /proc; procPid is the pid /proc knows us
// by (0 when it does not show us at all: a /proc of a namespace we are not
// in). The kernel resolves /proc/self through the mount's namespace, so a
// mismatch is exact: it cannot happen with a /proc of our own namespace.
func View() (procPid int, ours bool) {
	var buf [24]byte
	n, err := unix.Readlink(root+"/self", buf[:])
	if err != nil || n == 0 || n == len(buf) {
		return 0, false
	}
	pid, err := strconv.Atoi(string(buf[:n]))
	if err != nil {
		return 0, false
	}
	return pid, pid == os.Getpid() || failpoint.On(failpoint.TrustForeignProc)
}
