package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
