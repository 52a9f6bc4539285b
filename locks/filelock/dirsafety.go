package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/user"
	"strconv"
	"sync"
	"syscall"
)

// euid is the effective user id, asked of the kernel once: withlock never
// changes it, and every state transition checks a few files' owners.
var euid = sync.OnceValue(os.Geteuid)

// ErrNotOurs: a file in the lock directory belongs to another user, and
// only root (or that user) may change it: another user's stale lock, or a
// guard or fence file planted under a run id's name. It ends an attempt at
// once (exit 73), never a silent wait.
var ErrNotOurs = errors.New("owned by another user")

// ErrUnsafeDir: the lock directory is a symlink, world-writable or
// owned by another user.
var ErrUnsafeDir = errors.New("unsafe lock directory")

// checkPrivateDir refuses a directory that another user could write into:
// a symlink (its target may be changed), anything writable by group or
// others, and one owned by someone other than us or root.
func checkPrivateDir(dir string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symlink (owned by %s): give the real path, or a dir of your own with --dir",
			ErrUnsafeDir, dir, ownerOf(fi))
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory", ErrUnsafeDir, dir)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s is writable by %s (mode %s, owner %s): run chmod go-w %s, or use a dir of your own with --dir",
			ErrUnsafeDir, dir, writers(fi), modeText(fi), ownerOf(fi), dir)
	}
	if uid, ok := ownerUID(fi); ok && uid != euid() && uid != 0 {
		return fmt.Errorf("%w: %s is owned by %s, not by you (uid %d) or root: use a dir of your own with --dir",
			ErrUnsafeDir, dir, ownerOf(fi), euid())
	}
	return nil
}

// checkLockDir accepts a private directory, or a shared one: root-owned,
// sticky and writable by all, reached directly or through a symlink that
// root owns. In a sticky directory no user can remove or rename another's
// files, and every file withlock changes there is checked to be ours first.
func checkLockDir(dir string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return checkSharedLink(dir, fi)
	}
	if isShared(fi) {
		return nil
	}
	if fi.IsDir() && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&fs.ModeSticky != 0 {
		return fmt.Errorf("%w: %s is writable by all (mode %s) but owned by %s, not root: use a dir of your own with --dir",
			ErrUnsafeDir, dir, modeText(fi), ownerOf(fi))
	}
	return checkPrivateDir(dir, fi)
}

// checkSharedLink accepts a root-owned symlink to a shared directory, as
// /var/lock → /run/lock: only root could point it elsewhere.
func checkSharedLink(dir string, link fs.FileInfo) error {
	if uid, ok := ownerUID(link); !ok || uid != 0 {
		return fmt.Errorf("%w: %s is a symlink owned by %s, not root: give the real path, or a dir of your own with --dir",
			ErrUnsafeDir, dir, ownerOf(link))
	}
	target, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %s is a symlink to nothing usable: %w", ErrUnsafeDir, dir, err)
	}
	if !isShared(target) {
		return fmt.Errorf("%w: %s is a symlink to a dir that is not a root-owned sticky shared dir (mode %s, owner %s): give the real path",
			ErrUnsafeDir, dir, modeText(target), ownerOf(target))
	}
	return nil
}

// isShared: a root-owned sticky directory writable by all (/tmp, /run/lock).
func isShared(fi fs.FileInfo) bool {
	uid, ok := ownerUID(fi)
	return ok && uid == 0 && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0
}

// checkOwned refuses a file in the lock directory that belongs to another
// user, unless we are root: in a shared directory such a file is another
// user's lock state (or a plant), which we must neither change nor wait on.
// what says which file it is ("guard", "fence", "lock file").
func checkOwned(what, path string, fi fs.FileInfo) error {
	uid, ok := ownerUID(fi)
	if !ok || uid == euid() || euid() == 0 {
		return nil
	}
	return &NotOursError{What: what, Path: path, UID: uid}
}

// NotOursError is checkOwned's refusal. It matches ErrNotOurs.
type NotOursError struct {
	What string
	Path string
	UID  int
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("%s %s belongs to %s: only root or its owner may change it (run ids are per user in a shared dir: use another run id or dir, or ask root to remove it)",
		e.What, e.Path, userText(e.UID))
}

func (e *NotOursError) Unwrap() error { return ErrNotOurs }

func ownerOf(fi fs.FileInfo) string {
	uid, ok := ownerUID(fi)
	if !ok {
		return "an unknown user"
	}
	return userText(uid)
}

// ownerUID is the uid owning the file fi describes; ok is false when that
// is not known (no FileInfo: a view a test built).
func ownerUID(fi fs.FileInfo) (uid int, ok bool) {
	if fi == nil {
		return 0, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
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

// userText is "uid 65534 (nobody)", or "root".
func userText(uid int) string {
	if uid == 0 {
		return "root"
	}
	s := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}

func writers(fi fs.FileInfo) string {
	switch p := fi.Mode().Perm(); {
	case p&0o020 != 0 && p&0o002 != 0:
		return "group and others"
	case p&0o020 != 0:
		return "its group"
	default:
		return "others"
	}
}

// mayReclaim checks, under the guard, that a lock judged stale may be
// moved aside by us: it is ours (or we are root) — in a shared dir another
// user's stale lock is theirs or root's to move — and its fencing token can
// still grow, so that moving it does not make the next token smaller.
func (r *RunLocker) mayReclaim(runID, lockPath string, v lockView, reason StaleReason) error {
	if err := checkOwned("stale lock file ("+string(reason)+")", lockPath, v.fi); err != nil {
		return err
	}
	if v.parseErr == nil && v.payload.FencingToken == math.MaxUint64 {
		return fmt.Errorf("%w: stale lock file %s carries %d, the largest token: move it aside with withlock break --force once no store relies on it",
			ErrFenceExhausted, lockPath, v.payload.FencingToken)
	}
	return nil
}

// lockMode is the mode of a new lock file: 0600 in a private dir; 0644 in
// a shared one, so that another user's withlock can read who holds the run
// id — a live lock is then a conflict naming its holder and owner, not an
// unreadable file — and tell a stale one from a live one. The payload says
// no more than ps does; no one but its owner and root can change it there.
func (r *RunLocker) lockMode() fs.FileMode {
	if r.shared {
		return 0o644
	}
	return 0o600
}

// explainDenied turns a refused open of another user's file (EACCES: its
// mode keeps us out) into the NotOursError that names its owner.
func explainDenied(fsys FS, what, path string, err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if fi, lerr := fsys.Lstat(path); lerr == nil {
		if nerr := checkOwned(what, path, fi); nerr != nil {
			return nerr
		}
	}
	return err
}
