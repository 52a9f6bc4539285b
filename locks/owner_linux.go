package locks

import (
	"fmt"
	"io/fs"
	"syscall"
)

func ownerUID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// modeText is the mode as chmod takes it: 0770, 1777.
func modeText(fi fs.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%04o", st.Mode&0o7777)
	}
	return fmt.Sprintf("%04o", fi.Mode().Perm())
}
