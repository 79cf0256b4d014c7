package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/internal/meshtest"
	"meshplane/secrets"
)

// A refused import writes nothing: no data directory where there was
// none, and no secret key in one that holds a store, also when the file's
// check reads that store (an apply of a node the file does not register).
// Before, the check opened the store through a controller, which made
// DATA/secret.key.
func TestImportRefusedWritesNothing(t *testing.T) {
	src := upExample(t)
	export := mustMesh(t, "export", "--data", src)
	lines := strings.SplitAfter(export, "\n")
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(good, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	apply := strings.TrimSpace(firstLine(t, lines, `"type":"apply.reported"`, `"actor":"agent:novox"`))
	ghost := strings.NewReplacer(`"stream":"node-novox"`, `"stream":"node-ghost"`, `"node":"novox"`, `"node":"ghost"`,
		`"declaration":"novox/`, `"declaration":"ghost/`, `"actor":"agent:novox"`, `"actor":"agent:ghost"`).Replace(withID(t, apply))
	if err := os.WriteFile(bad, []byte(ghost+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	none := filepath.Join(dir, "none")
	if code, out, errOut := mesh(t, "import", bad, "--data", none); code != exitRejected {
		t.Fatalf("import of a bad file: exit %d, want 3\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(none); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused import made the data directory (%v)", err)
	}

	data := filepath.Join(dir, "data")
	mustMesh(t, "import", good, "--data", data)
	key := filepath.Join(data, secrets.KeyFile)
	if _, err := os.Stat(key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an import made a secret key, which it never needs (%v)", err)
		os.Remove(key)
	}
	if code, out, errOut := mesh(t, "import", bad, "--data", data); code != exitRejected || !strings.Contains(errOut, "node ghost is not registered") {
		t.Fatalf("import of a ghost's apply: exit %d, want 3\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(key); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused import made %s (%v)", key, err)
	}
}

// runMesh runs the mesh binary with stdin and a TMPDIR of its own, and
// returns its exit code and output; it fails the test when the run takes
// longer than limit.
func runMesh(t *testing.T, tmp string, stdin []byte, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(meshtest.Binary(t), args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out meshtest.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var xe *exec.ExitError
		if err != nil && !errors.As(err, &xe) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("mesh %s still ran after %v\n%s", strings.Join(args, " "), limit, out.String())
		return 0, ""
	}
}

// TestProcessImportReadsOnce: mesh import and mesh replay read a file that
// can be read only once, stop on a line over the bound, and stop on a
// signal while they wait on a FIFO whose writer is idle, writing nothing.
// Before: an import from a pipe failed on its second pass ("N line(s) at
// its end are gone"), /dev/zero was read for ever, and SIGINT and SIGTERM
// were not heard by a read waiting on a FIFO.
func TestProcessImportReadsOnce(t *testing.T) {
	src := upExample(t)
	export := mustMesh(t, "export", "--data", src)
	n := strings.Count(export, "\n")
	tmp := t.TempDir()
	dir := t.TempDir()

	t.Run("stdin", func(t *testing.T) {
		data := filepath.Join(dir, "stdin")
		code, out := runMesh(t, tmp, []byte(export), time.Minute, "import", "/dev/stdin", "--data", data)
		if code != exitOK || !strings.Contains(out, "imported "+strconv.Itoa(n)+" event(s) from /dev/stdin: "+strconv.Itoa(n)+" appended") {
			t.Fatalf("import from a pipe: exit %d\n%s", code, out)
		}
		code, out = runMesh(t, tmp, []byte(export), time.Minute, "replay", "/dev/stdin")
		if code != exitOK || !strings.Contains(out, "the runs agree") {
			t.Fatalf("replay from a pipe: exit %d\n%s", code, out)
		}
	})

	t.Run("/dev/zero", func(t *testing.T) {
		for _, args := range [][]string{{"import", "/dev/zero", "--data", filepath.Join(dir, "zero")}, {"replay", "/dev/zero"}} {
			code, out := runMesh(t, tmp, nil, time.Minute, args...)
			if code == exitOK || !strings.Contains(out, "line 1 is longer than 1114112 bytes") {
				t.Errorf("mesh %s: exit %d\n%s", strings.Join(args, " "), code, out)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "zero")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an import of /dev/zero made its data directory (%v)", err)
		}
	})

	t.Run("signals", func(t *testing.T) {
		for _, tc := range []struct {
			sig  syscall.Signal
			args []string
		}{
			{syscall.SIGINT, []string{"import", "--data", filepath.Join(dir, "fifo")}},
			{syscall.SIGTERM, []string{"import", "--data", filepath.Join(dir, "fifo")}},
			{syscall.SIGINT, []string{"replay"}},
			{syscall.SIGTERM, []string{"replay"}},
		} {
			fifo := filepath.Join(t.TempDir(), "in.fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			// The test's writer: it gives a line and then nothing.
			w, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteString(export[:strings.Index(export, "\n")+1]); err != nil {
				t.Fatal(err)
			}
			args := append([]string{tc.args[0], fifo}, tc.args[1:]...)
			p := meshtest.StartProc(t, []string{"TMPDIR=" + tmp}, args...)
			time.Sleep(time.Second) // reading, then waiting on the FIFO
			p.Cmd.Process.Signal(tc.sig)
			select {
			case <-p.Done:
			case <-time.After(20 * time.Second):
				t.Fatalf("mesh %s: still running 20 s after %v\n%s", strings.Join(args, " "), tc.sig, p.Out)
			}
			w.Close()
			if p.Cmd.ProcessState.ExitCode() == exitOK {
				t.Errorf("mesh %s stopped by %v: exit 0\n%s", strings.Join(args, " "), tc.sig, p.Out)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "fifo")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("an import stopped by a signal made its data directory (%v)", err)
		}
	})

	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("a copy of a file read once is left in TMPDIR: %s", left[0].Name())
	}
}

// Every bad line is listed, however many: 150 of them are 150 lines on
// stderr, the last named. Before, the list stopped at 100, then "and 50
// more line(s)".
func TestImportListsEveryBadLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(file, bytes.Repeat([]byte("{}\n"), 150), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mesh(t, "import", file, "--data", filepath.Join(dir, "data"))
	if code != exitRejected || strings.Count(errOut, ": not an event to import: ") != 150 ||
		!strings.Contains(errOut, "line 150: not an event to import: ") || strings.Contains(errOut, "more line(s)") {
		t.Fatalf("exit %d, want 3 listing 150 lines\n%s%s", code, out, errOut)
	}
}
