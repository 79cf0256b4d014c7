package importfile_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/commands"
	"meshplane/commands/importfile"
	"meshplane/events"
	"meshplane/events/memstore"
)

// fifo makes a FIFO in a temporary directory.
func fifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A file that can be read only once (a FIFO, as a pipe or /dev/stdin is)
// imports whole: the first pass keeps a copy that the second reads, and
// Close removes it. Before, the second pass found the file empty ("N
// line(s) at its end are gone").
func TestImportFromAFIFO(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	export := exported(t)
	path := fifo(t)
	wrote := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString(export)
			f.Close()
		}
		wrote <- err
	}()
	st := memstore.New()
	defer st.Close()
	c, err := importfile.Check(ctx, path, events.NewRegistry(), importfile.Store{Open: func() (events.Store, error) { return nopCloser{st}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if len(c.Bad) > 0 {
		t.Fatal(c.Bad[0])
	}
	res, err := c.Append(ctx, nil)
	lines := strings.Count(export, "\n")
	if err != nil || res.Appended != lines {
		t.Fatalf("import from a FIFO: %+v, %v; want %d appended", res, err, lines)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the copy is left behind: %s", left[0].Name())
	}
}

// A line longer than MaxLine stops the read at once, naming the line and
// the bound: /dev/zero, one endless line, is refused (before, the import
// read it for ever), and so is a file whose third line is too long.
func TestImportRefusesALineOverTheBound(t *testing.T) {
	ctx := context.Background()
	t.Setenv("TMPDIR", t.TempDir())
	export := exported(t)
	lines := strings.SplitAfter(export, "\n")
	long := filepath.Join(t.TempDir(), "long.jsonl")
	write(t, long, lines[0]+lines[1]+strings.Repeat(" ", importfile.MaxLine+2)+"x\n"+lines[2])
	for _, tc := range []struct{ path, line string }{
		{"/dev/zero", "line 1 "},
		{long, "line 3 "},
	} {
		t.Run(tc.path, func(t *testing.T) {
			done := make(chan struct{})
			var err error
			go func() {
				defer close(done)
				var c *importfile.Checked
				c, err = importfile.Check(ctx, tc.path, events.NewRegistry(), importfile.Store{None: true})
				if err == nil {
					c.Close()
				}
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("Check of %s still reads after 20 s", tc.path)
			}
			var rej *commands.Rejection
			if !errors.Is(err, importfile.ErrLineTooLong) || !errors.As(err, &rej) || rej.Code != commands.CodeInvalid ||
				!strings.Contains(err.Error(), tc.line) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", importfile.MaxLine)) {
				t.Fatalf("Check of %s: %v; want a refusal of its %s(over %d bytes)", tc.path, err, tc.line, importfile.MaxLine)
			}
		})
	}
}

// A read waiting on a FIFO stops when its context is done: one whose
// writer is there and idle (blocked in read), and one that has no writer
// yet (blocked in open). Before, both waited for ever.
func TestImportStopsOnItsContext(t *testing.T) {
	export := exported(t)
	first := export[:strings.Index(export, "\n")+1]
	for _, tc := range []struct {
		name   string
		writer bool
	}{
		{"an idle writer", true},
		{"no writer", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			path := fifo(t)
			if tc.writer {
				// Opened read-write, the FIFO has a writer that never
				// writes more than a line, nor closes before the test ends.
				w, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
				if _, err := w.WriteString(first); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				c, err := importfile.Check(ctx, path, events.NewRegistry(), importfile.Store{None: true})
				if err == nil {
					c.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Check, its context cancelled: %v; want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Check still waits 10 s after its context was cancelled")
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("Check stopped %v after its start", took)
			}
		})
	}
}

// mesh import --help says the bound of a line as MaxLine is.
func TestHelpSaysTheLineBound(t *testing.T) {
	if !strings.Contains(importfile.Help, fmt.Sprintf("longer than %d bytes", importfile.MaxLine)) {
		t.Errorf("the help does not say a line is bound at %d bytes", importfile.MaxLine)
	}
}
