//go:build !linux

package locks

import "io/fs"

func ownerUID(fi fs.FileInfo) (int, bool) { return 0, false }
func inode(fi fs.FileInfo) uint64         { return 0 }

// oNoFollow: no O_NOFOLLOW to lean on here.
const oNoFollow = 0
