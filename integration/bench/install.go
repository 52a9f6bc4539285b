//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// installCopy writes a copy of src at dst (mode 0755) with plain write(2)
// calls, as install(1) and package managers do, replacing any file there.
// Every Go binary the bench runs is run from such a copy, so each is
// measured as a user's installed binary is, not as the linker left it.
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
	// Plain reads and writes, as install(1): io.Copy between two *os.File
	// would use copy_file_range.
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
