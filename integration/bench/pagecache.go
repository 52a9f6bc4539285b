//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// How a binary's file sits in the page cache changes its start-up here, by
// 0.1-0.7 ms for withlock's 7.6 MB (README, Performance): the same bytes
//   - written with write(2), as install(1), cp and package managers do:
//     the kernel caches them in large folios, physically contiguous;
//   - left by the Go linker (it writes its output through mmap) and renamed
//     into place by go build: small pages, scattered;
//   - read back from disk after the page cache dropped them (a reboot,
//     memory pressure): small pages, scattered.
// Every exec maps ~1,100 of withlock's text and rodata pages (fault-around
// maps 16 per fault) and unmaps them at exit; with large folios both go in
// batches. flock's binary is four pages and does not care. So the bench runs
// every Go binary it measures from an installed copy, the state a user's
// installed withlock has, and the pagecache section shows the other two.

// installCopy writes a copy of src at dst (mode 0755) with plain write(2)
// calls, as install(1) does, replacing any file there.
func installCopy(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("install %s: %w", src, err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("install %s: %w", dst, err)
	}
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("install %s: %w", dst, err)
	}
	// Plain reads and writes: io.Copy between two *os.File would use
	// copy_file_range, which need not go through the same page-cache path.
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 1<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("install %s: %w", dst, err)
	}
	return nil
}

// dropFromPageCache writes path's pages back and asks the kernel to drop
// them, so that the next exec reads the file from disk. It fails when more
// than a tenth of the file is still cached afterwards.
func dropFromPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise %s: %w", path, err)
	}
	cached, total, err := residentPages(fd)
	if err != nil {
		return fmt.Errorf("mincore %s: %w", path, err)
	}
	if cached*10 > total {
		return fmt.Errorf("%s: %d of %d pages still cached after FADV_DONTNEED", path, cached, total)
	}
	return nil
}

// residentPages counts the pages of the open file fd that are in the page
// cache (mincore of a read-only mapping, which touches none of them).
func residentPages(fd int) (cached, total int, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, err
	}
	if st.Size == 0 {
		return 0, 0, nil
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		return 0, 0, errno
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec), nil
}

// pagecache: the overhead run with withlock's binary in each state.
func init() {
	register(section{
		order: 11,
		name:  "pagecache",
		title: "lock, run `true`, release, by how withlock's binary sits in the page cache (wall per run)",
		unit:  "ms",
		base:  "flock",
		note: "the same bytes three ways: installed (written with write(2), as install(1) and package managers do; " +
			"every other section runs this copy), read back from disk (written, synced, dropped with FADV_DONTNEED " +
			"before the first run) and as go build left it (or as -bin named it); Δ and × are against flock",
		runs:    func(b *bench) int { return b.n },
		warmup:  true,
		prepare: preparePagecache,
	})
}

func preparePagecache(b *bench) ([]*tool, func(), error) {
	dir := b.dir("pagecache")
	lockFile := filepath.Join(dir, "flock.lock")
	run := func(bin string) func(int) (float64, error) {
		return b.wallOf(0, bin, "run", "--dir", dir, "pc", "--", "/bin/true")
	}
	asFound := "as built (go build's output)"
	if b.withlockGiven {
		asFound = "as -bin named it"
	}
	installed := b.withlockTool("installed copy", run(b.withlock))
	reread := &tool{name: "re-read", command: "the same, read back from disk", missing: b.withlockMissing}
	found := &tool{name: "as-found", command: asFound, missing: b.withlockMissing}
	if b.withlock != "" {
		path := filepath.Join(dir, "withlock-reread")
		err := installCopy(b.withlock, path)
		if err == nil {
			err = dropFromPageCache(path)
		}
		if err != nil {
			reread.missing = "n/a (" + err.Error() + ")"
		} else {
			reread.measure = run(path)
		}
		found.measure = run(b.withlockAsFound)
	}
	flock := peer("flock", "flock F true", func(path string) func(int) (float64, error) {
		return b.wallOf(0, path, lockFile, "/bin/true")
	})
	return []*tool{installed, reread, found, flock}, func() {}, nil
}
