//go:build linux && !mips && !mipsle && !mips64 && !mips64le

package supervisor

import (
	"os"
	"syscall"
)

// stackFault is SIGSTKFLT, which MIPS does not have.
var stackFault = []os.Signal{syscall.SIGSTKFLT}
