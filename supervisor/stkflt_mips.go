//go:build linux && (mips || mipsle || mips64 || mips64le)

package supervisor

import "os"

// stackFault: MIPS has no SIGSTKFLT.
var stackFault []os.Signal
