package filelock

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/withlock/withlock/internal/proc"
)

// inheritFrom is the lowest descriptor number the tree file is moved to:
// above the few that shells and scripts name (`exec 3>log`, `flock 9`), so
// that a command reusing a low number does not drop its hold on the tree.
const inheritFrom = 100

// createTree creates the tree file at path with perm, locks it exclusively
// and makes its descriptor inheritable (see tree.go). In a shared dir perm
// lets other users read it, so their probe sees a running tree (a probe
// needs only a read-only open; their shared lock cannot be had while ours
// is held, and does not stop anyone's probe once it is not). Files are
// made, renamed and removed through fsys, like every lock file.
func createTree(fsys FS, path string, perm fs.FileMode) (*os.File, error) {
	f, err := fsys.OpenTree(path, true, perm)
	if err != nil {
		return nil, err
	}
	fail := func(op string, err error) (*os.File, error) {
		f.Close()
		fsys.Remove(path)
		return nil, &fs.PathError{Op: op, Path: path, Err: err}
	}
	if err := flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail("flock", err)
	}
	if err := inheritable(&f, path); err != nil {
		return fail("fcntl", err)
	}
	return f, nil
}

// reuseTree makes the spare tree file at spare this acquisition's tree
// file at path (see tree.go): it opens the spare, checks that it is this
// user's, locks it exclusively, renames it to path and makes its
// descriptor inheritable. It returns nil when there is no spare to take:
// none, another user's, one whose mode is not perm (the dir became shared
// or private since), or one still held — which it unlinks, so that the
// processes holding it keep a file no lock names.
func reuseTree(fsys FS, spare, path string, perm fs.FileMode) *os.File {
	f, err := fsys.OpenTree(spare, false, 0)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		f.Close()
		return nil
	}
	if uid, ok := ownerUID(fi); !ok || uid != euid() {
		f.Close()
		return nil
	}
	if err := flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			fsys.Remove(spare)
		}
		return nil
	}
	if err := fsys.Rename(spare, path); err != nil {
		f.Close()
		return nil
	}
	if err := inheritable(&f, path); err != nil {
		f.Close()
		fsys.Remove(path)
		return nil
	}
	return f
}

// inheritable makes *f's descriptor survive exec, moving it to a number
// of inheritFrom or above where there is room; the moved copy is named
// name (the file's path now, which a reused spare's open no longer is).
func inheritable(f **os.File, name string) error {
	// F_DUPFD (not F_DUPFD_CLOEXEC): the copy is inherited across exec. A
	// tiny `ulimit -n` has no room that high: then the descriptor keeps
	// its number and only loses close-on-exec.
	fd, err := unix.FcntlInt((*f).Fd(), unix.F_DUPFD, inheritFrom)
	if err != nil {
		_, err := unix.FcntlInt((*f).Fd(), unix.F_SETFD, 0)
		return err
	}
	(*f).Close() // the flock belongs to the open file, which the copy shares
	*f = os.NewFile(uintptr(fd), name)
	return nil
}

// probeTree says whether anything still holds the tree file at path.
func probeTree(path string) TreeState {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return TreeEnded
	}
	if err != nil {
		return TreeUnknown
	}
	defer f.Close()
	switch err := flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); {
	case err == nil:
		return TreeEnded // closing f lets the probe's shared lock go
	case errors.Is(err, unix.EWOULDBLOCK):
		return TreeRunning
	}
	return TreeUnknown
}

// awaitTreeEnd returns a channel closed once nothing holds the tree file at
// path any more; nil (never ready) when the file cannot be opened, and the
// caller's poll decides. A goroutine blocks in flock(LOCK_SH) until the
// kernel grants it: the last process of the tree exiting wakes it. Such a
// flock cannot be interrupted, only abandoned: it lets go the moment it
// is granted.
func awaitTreeEnd(path string) <-chan struct{} {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.Close()
		flock(int(f.Fd()), unix.LOCK_SH)
	}()
	return done
}

// treePids lists the processes that still hold the tree file at path
// (matched by device and inode in /proc/*/fd), with the other members of
// their process groups (a process that closed its descriptors but stayed
// in the group is still the command's). ok is false when /proc could not
// tell.
func treePids(path string) (pids []int, ok bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return nil, false
	}
	holding, err := proc.Holding(proc.FileID{Dev: uint64(st.Dev), Ino: st.Ino})
	if err != nil {
		return nil, false
	}
	// The caller holds the file too while it probes: neither it nor its
	// process group (the shell that started it) is the command's.
	self := os.Getpid()
	seen := map[int]bool{self: true}
	groups := map[int]bool{}
	for _, pid := range holding {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		pids = append(pids, pid)
		if p, err := proc.Read(pid); err == nil {
			groups[p.Pgrp] = true
		}
	}
	if me, err := proc.Read(self); err == nil {
		delete(groups, me.Pgrp)
	}
	if len(groups) > 0 {
		if all, err := proc.All(); err == nil {
			for _, p := range all {
				if groups[p.Pgrp] && !seen[p.Pid] && p.State != 'Z' && p.State != 'X' {
					seen[p.Pid] = true
					pids = append(pids, p.Pid)
				}
			}
		}
	}
	return pids, true
}
