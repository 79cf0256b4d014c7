// Package atomicfile replaces a file whole or not at all.
//
// A write goes to a temporary file in the target's directory (so the rename
// stays within one file system), is given its mode, synced, renamed over the
// target, and the directory is synced so the rename itself survives a crash.
// A reader sees the old file or the new one, never a part; a write that
// fails at any step leaves the old file as it was and no temporary file
// behind (one left by a crash is named TempPrefix, the target's name, '-'
// and a random suffix; a directory's owner may remove those when it opens).
//
// Only a regular file (or no file) is replaced. Every path is looked at
// first (Lstat, not following a link), since many are named by a user
// (`mesh export -f`, `--creds`, the agent's data directory, install's unit):
//   - a character or block device or a FIFO (`/dev/null`, `/dev/stdout`,
//     a named pipe) is written through: opened for writing (never created,
//     never followed if it became a link), written, closed; no mode is set,
//     nothing is renamed over it. A FIFO's open waits for its reader.
//   - a symbolic link, a socket or a directory is refused with an error
//     wrapping ErrNotRegular that names the path and what it is; nothing is
//     written, the link and what it points to are left as they are.
//
// The look and the rename are two steps: the path is looked at again just
// before the rename, and a path that stopped being a regular file between
// them is refused then.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular is the error of a write to a path that is neither a
// regular file, a device nor a FIFO: a symbolic link, a socket or a
// directory. The error wrapping it names the path and what it is.
var ErrNotRegular = errors.New("not a regular file, device or FIFO")

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
//
// A device or FIFO at path is written through; a link, socket or
// directory is refused (ErrNotRegular): see the package comment.
func Write(path string, perm os.FileMode, write func(w io.Writer) error) (err error) {
	through, err := look(path)
	if err != nil {
		return err
	}
	if through {
		return writeThrough(path, write)
	}
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
	if through, err := look(path); err != nil || through {
		if err == nil {
			err = fmt.Errorf("atomicfile: %s became a device or FIFO while it was written: %w", path, ErrNotRegular)
		}
		return err
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

// look says whether path is to be written through (a device or FIFO), or
// replaced (a regular file, or nothing yet), or refused: an error wrapping
// ErrNotRegular naming what it is, or the error of the Lstat.
func look(path string) (through bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("atomicfile: %w", err)
	}
	m := fi.Mode()
	switch {
	case m.IsRegular():
		return false, nil
	case m&(fs.ModeDevice|fs.ModeNamedPipe) != 0:
		return true, nil
	}
	return false, fmt.Errorf("atomicfile: %s is %s: %w", path, kind(m), ErrNotRegular)
}

// kind names the type of a file that is refused.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a regular file (" + m.Type().String() + ")"
}

// writeThrough writes to the device or FIFO at path: opened for writing
// only, never created or truncated, never through a link (O_NOFOLLOW), and
// checked once open to be a device or FIFO still.
func writeThrough(path string, write func(w io.Writer) error) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("atomicfile: write through: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("atomicfile: close %s: %w", path, cerr)
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	if fi.Mode()&(fs.ModeDevice|fs.ModeNamedPipe) == 0 {
		return fmt.Errorf("atomicfile: %s is no longer a device or FIFO: %w", path, ErrNotRegular)
	}
	return write(f)
}
