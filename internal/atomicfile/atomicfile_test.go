package atomicfile_test

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"meshplane/internal/atomicfile"
)

func TestWriteFile(t *testing.T) {
	for _, c := range []struct {
		name string
		old  []byte // nil: no file before
		perm os.FileMode
	}{
		{"new file, private", nil, 0o600},
		{"new file, readable", nil, 0o644},
		{"replaces, mode changes", []byte("old\n"), 0o640},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.json")
			if c.old != nil {
				if err := os.WriteFile(p, c.old, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := atomicfile.WriteFile(p, []byte("new\n"), c.perm); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil || string(b) != "new\n" {
				t.Fatalf("read = %q, %v; want %q", b, err, "new\n")
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != c.perm {
				t.Errorf("mode = %#o, want %#o", got, c.perm)
			}
			onlyTarget(t, dir)
		})
	}
}

func TestWriteFailedLeavesOld(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := atomicfile.Write(p, 0o600, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want the writer's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("after a failed write the file is %q, want %q", b, "old")
	}
	onlyTarget(t, dir)
}

func TestWriteNoDirectory(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "f")
	if err := atomicfile.WriteFile(p, []byte("x"), 0o600); err == nil || !strings.HasPrefix(err.Error(), "atomicfile: ") {
		t.Fatalf("WriteFile into a missing directory = %v, want an atomicfile error", err)
	}
}

func TestWriteRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := atomicfile.WriteFile("rel", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "rel")); err != nil || string(b) != "x" {
		t.Fatalf("read = %q, %v", b, err)
	}
}

// onlyTarget fails if dir holds anything but one file, or a temporary file.
func onlyTarget(t *testing.T, dir string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if strings.HasPrefix(de.Name(), atomicfile.TempPrefix) {
			t.Errorf("temporary file %s left behind", de.Name())
		}
	}
	if len(des) != 1 {
		t.Errorf("dir holds %d entries, want 1", len(des))
	}
}

// TestWriteNotRegular: a path that is not a regular file is never replaced.
// A character device (the null device's numbers, made by mknod in a temp
// directory) and a FIFO with a reader are written through and stay what
// they were; a symbolic link, a socket and a directory are refused naming
// the path, and left as they were (the link's target too).
func TestWriteNotRegular(t *testing.T) {
	t.Run("character device", func(t *testing.T) {
		if os.Geteuid() != 0 {
			if inCI() {
				t.Fatal("mknod needs root, and CI runs as root")
			}
			t.Skip("SKIPPED: mknod of a character device needs root")
		}
		dir := t.TempDir()
		p := filepath.Join(dir, "null")
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
		before, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.WriteFile(p, []byte("export\n"), 0o600); err != nil {
			t.Fatalf("WriteFile to a character device = %v, want it written through", err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeCharDevice == 0 || fi.Mode() != before.Mode() || !os.SameFile(fi, before) {
			t.Errorf("after the write %s is %v, want the character device %v it was", p, fi.Mode(), before.Mode())
		}
		onlyTarget(t, dir)
	})
	t.Run("fifo with a reader", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "pipe")
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
		// The reader's end is opened first (not blocking: no writer yet),
		// so that the write's open finds a reader; what it wrote is in the
		// pipe when WriteFile returns, and then EOF.
		r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if err := atomicfile.WriteFile(p, []byte("through\n"), 0o600); err != nil {
			t.Fatalf("WriteFile to a FIFO = %v, want it written through", err)
		}
		if b, err := io.ReadAll(r); err != nil || string(b) != "through\n" {
			t.Errorf("the FIFO's reader read %q, %v, want %q", b, err, "through\n")
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("after the write %s is %v (%v), want the FIFO it was", p, fi.Mode(), err)
		}
		onlyTarget(t, dir)
	})
	for _, c := range []struct {
		name, kind string
		make       func(t *testing.T, p string)
	}{
		{"symlink", "a symbolic link", func(t *testing.T, p string) {
			target := filepath.Join(filepath.Dir(filepath.Dir(p)), "target")
			if err := os.WriteFile(target, []byte("target\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"dangling symlink", "a symbolic link", func(t *testing.T, p string) {
			if err := os.Symlink(filepath.Join(filepath.Dir(p), "nowhere"), p); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", "a socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			t.Cleanup(func() { l.Close() })
		}},
		{"directory", "a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			top := t.TempDir()
			dir := filepath.Join(top, "d")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "out")
			c.make(t, p)
			before, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			err = atomicfile.WriteFile(p, []byte("new\n"), 0o600)
			if !errors.Is(err, atomicfile.ErrNotRegular) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), c.kind) {
				t.Fatalf("WriteFile to %s = %v, want ErrNotRegular naming %s as %s", c.name, err, p, c.kind)
			}
			after, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("%s was replaced: %v, was %v", p, after.Mode(), before.Mode())
			}
			if b, err := os.ReadFile(filepath.Join(top, "target")); err == nil && string(b) != "target\n" {
				t.Errorf("the link's target now holds %q", b)
			}
			onlyTarget(t, dir)
		})
	}
}

// inCI reports whether the tests run under CI (env CI=true), where what a
// test needs is a failure when missing, never a skip.
func inCI() bool { v, _ := strconv.ParseBool(os.Getenv("CI")); return v }
