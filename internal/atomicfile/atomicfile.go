// Package atomicfile replaces a file whole or not at all.
//
// A write goes to a temporary file in the target's directory (so the rename
// stays within one file system), is given its mode, synced, renamed over the
// target, and the directory is synced so the rename itself survives a crash.
// A reader sees the old file or the new one, never a part; a write that
// fails at any step leaves the old file as it was and no temporary file
// behind (one left by a crash is named TempPrefix, the target's name, '-'
// and a random suffix; a directory's owner may remove those when it opens).
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temporary file Write makes: a dot
// file, whose name ends in a random suffix, so neither a listing by glob
// ("*.json") nor a reader of the target's name sees it.
const TempPrefix = ".tmp-"

// WriteFile replaces path with b, at mode perm (exactly: the umask does not
// apply), durably.
func WriteFile(path string, b []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// Write replaces path with what write writes, at mode perm, durably. If
// write returns an error, path is left as it was and that error is
// returned.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempPrefix+base+"-*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("atomicfile: %s: %w", path, err)
	}
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("atomicfile: sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("atomicfile: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	return SyncDir(dir)
}

// SyncDir syncs the directory dir, so that a rename, create or remove of an
// entry in it is on disk when it returns.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("atomicfile: sync dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("atomicfile: sync dir %s: %w", dir, err)
	}
	return nil
}
