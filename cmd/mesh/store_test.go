package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/internal/meshtest"
)

// TestMain lets a test run the mesh binary's main in a child process: the
// test binary, re-run with MESH_TEST_MAIN=1, is mesh (see runChild); with
// MESH_TEST_AGENTS a process of agents (testAgents).
func TestMain(m *testing.M) {
	if os.Getenv("MESH_TEST_MAIN") == "1" {
		os.Args = append([]string{"mesh"}, os.Args[1:]...)
		main()
		return
	}
	if os.Getenv("MESH_TEST_AGENTS") != "" {
		os.Exit(testAgents()) // push_procs_bench_test.go's
	}
	code := m.Run()
	meshtest.RemoveBinary() // what the process tests built
	if err := meshtest.ClosePG(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: close: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

var sizesRE = regexp.MustCompile(`\d+( bytes| pages walked)`)

func TestStoreVerify(t *testing.T) {
	dir := upExample(t)
	code, out, errOut := mesh(t, "store", "verify", "--data", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	// The file's size and page count are bbolt's to choose.
	golden(t, "store-verify", sizesRE.ReplaceAllString(out, "N$1"), dir)

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no store", []string{"store", "verify", "--data", t.TempDir()}, "no event store at"},
		{"an argument", []string{"store", "verify", "--data", dir, "x"}, `unexpected argument "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := mesh(t, tc.args...)
			if code == exitOK || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q, want it to say %q\n%s", code, errOut, tc.want, out)
			}
		})
	}
}

// Commands that only read open the store read-only: they run beside each
// other, create nothing, and never initialise an empty file.
func TestReadsAreReadOnly(t *testing.T) {
	dir := upExample(t)
	// A read-only store held open, as another read would.
	held, err := boltstore.Open(filepath.Join(dir, "events.db"), boltstore.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, args := range readCommands() {
		if code, out, errOut := mesh(t, append(args, "--data", dir)...); code != exitOK {
			t.Errorf("mesh %v beside another read: exit %d\n%s%s", args, code, out, errOut)
		}
	}
	if code, _, errOut := mesh(t, "node", "register", "--data", dir, "late"); code != exitFailed || !strings.Contains(errOut, "locked") {
		t.Errorf("a write beside a read: exit %d, %q; want it refused as locked", code, errOut)
	}

	empty := t.TempDir()
	for _, args := range readCommands() {
		if code, _, errOut := mesh(t, append(args, "--data", empty)...); code != exitFailed || !strings.Contains(errOut, "no event store at") {
			t.Errorf("mesh %v on an empty directory: exit %d, %q", args, code, errOut)
		}
	}
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Errorf("reads created %v in an empty directory", names)
	}

	zero := t.TempDir()
	path := filepath.Join(zero, "events.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range append(readCommands(), []string{"node", "register", "a"}) {
		code, out, errOut := mesh(t, append(args, "--data", zero)...)
		says := "store file damaged: boltstore: open " + path + ": stored data damaged: the file is empty (0 bytes)"
		if args[0] == "store" {
			says = "the file is empty (0 bytes)"
			errOut = out
		} else if !strings.HasSuffix(errOut, "; run mesh store verify\n") {
			t.Errorf("mesh %v on a zero-length events.db: %q does not point at mesh store verify", args, errOut)
		}
		if code != exitFailed || !strings.Contains(errOut, says) {
			t.Errorf("mesh %v on a zero-length events.db: exit %d, %q", args, code, errOut)
		}
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Fatalf("mesh %v wrote the zero-length events.db: %v", args, err)
		}
	}
}

// A read that had to skip events it could not decode prints what it could,
// says what it skipped, and exits 1.
func TestUndecodableEventsExit1(t *testing.T) {
	dir := upExample(t)
	s, err := boltstore.Open(filepath.Join(dir, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Append(context.Background(), "node-novox", events.Any,
		events.Event{ID: events.NewID(), Type: events.TypeNodeAdopted, Schema: 1, Data: []byte(`{"node":7}`)})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		out  string // printed all the same
	}{
		{[]string{"status"}, "novox"},
		{[]string{"timeline", "--limit", "1"}, "SUMMARY"},
		{[]string{"rebuild"}, "rebuilt every projection"},
		{[]string{"node", "show", "novox"}, "node     novox"},
		{[]string{"churn"}, "no churn"},
		{[]string{"roster", "g14"}, "routed name(s)"},
		{[]string{"why", "novox", "ca"}, "ca"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := mesh(t, append(tc.args, "--data", dir)...)
			if code != exitFailed || !strings.Contains(out, tc.out) || !strings.Contains(out+errOut, "1 event(s) could not be folded") {
				t.Errorf("exit %d, want 1, with %q printed and the skipped event named\n%s%s", code, tc.out, out, errOut)
			}
		})
	} // From a controller over the store, the queries whose answers say what
	// was skipped (status, timeline) exit 1 the same way.
	srv := startServer(t, dir)
	for _, args := range [][]string{{"status"}, {"timeline", "--limit", "1"}} {
		code, out, errOut := mesh(t, append(args, srv.flags()...)...)
		if code != exitFailed || !strings.Contains(out, "1 event(s) could not be folded") {
			t.Errorf("remote %v: exit %d, want 1 with the skipped event named\n%s%s", args, code, out, errOut)
		}
	}
}

// readCommands are the commands that only read, as the damage tests run
// them.
func readCommands() [][]string {
	return [][]string{
		{"status"},
		{"timeline"},
		{"node", "show", "novox"},
		{"why", "novox", "ca"},
		{"roster", "--history", "novox"},
		{"churn"},
		{"diff", "--from", "1"},
		{"rebuild"},
		{"store", "verify"},
	}
}

// storeDamages are truncations at many offsets and bit flips at many seeds
// (half of them aimed at bbolt's page headers and element tables, all within
// the pages in use).
func storeDamages(size, seeds int) []damage {
	var ds []damage
	for _, n := range []int{0, 1, 100, 4096, 8191, 8192, 12288, 16384, 20000, 32768, 40960, 65536, size - 4096, size - 1} {
		if n >= 0 && n < size {
			ds = append(ds, damage{fmt.Sprintf("truncated to %d", n), func(b []byte) []byte { return b[:n] }})
		}
	}
	for seed := range uint64(seeds) {
		ds = append(ds, damage{fmt.Sprintf("bits flipped, seed %d", seed), func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(seed, 6))
			used := min(len(b), 20*4096)
			for range 1 + rng.IntN(3) {
				off := rng.IntN(used)
				if seed%2 == 1 {
					off = (off/4096)*4096 + rng.IntN(16+16*6)
				}
				b[off] ^= 1 << rng.IntN(8)
			}
			return b
		}})
	}
	return ds
}

type damage struct {
	name string
	do   func([]byte) []byte
}

// runSafe runs the CLI in process, turning a panic into a test failure.
func runSafe(t *testing.T, args ...string) (code int, out string, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("mesh %v panicked: %v", args, r)
			code, out, errOut = -1, o.String(), e.String()
		}
	}()
	code = run(context.Background(), args, &o, &e)
	return code, durationRE.ReplaceAllString(o.String(), "in DURATION"), e.String()
}

// TestDamagedStores damages copies of a store and runs every read command
// on each: none panics, and none exits 0 unless its output is exactly what
// it prints for the undamaged store.
func TestDamagedStores(t *testing.T) {
	orig := upExample(t)
	good, err := os.ReadFile(filepath.Join(orig, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, args := range readCommands() {
		code, out, errOut := runSafe(t, append(args, "--data", orig)...)
		if code != exitOK {
			t.Fatalf("mesh %v on the undamaged store: exit %d\n%s%s", args, code, out, errOut)
		}
		// The file's size is no answer from the store: a copy cut short in
		// the free space past its last page in use reads the same.
		want[strings.Join(args, " ")] = sizesRE.ReplaceAllString(strings.ReplaceAll(out, orig, "DATA"), "N$1")
	}
	var failedExits, sameOutput int
	for i, d := range storeDamages(len(good), 48) {
		t.Run(d.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "events.db"), d.do(bytes.Clone(good)), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range readCommands() {
				key := strings.Join(args, " ")
				code, out, errOut := runSafe(t, append(args, "--data", dir)...)
				out = sizesRE.ReplaceAllString(strings.ReplaceAll(out, dir, "DATA"), "N$1")
				switch {
				case code == exitOK && out != want[key]:
					t.Errorf("mesh %s: exit 0 with output unlike the undamaged store's:\n%s\n--- want\n%s", key, out, want[key])
				case code == exitOK:
					sameOutput++
				case code != exitFailed:
					t.Errorf("mesh %s: exit %d, want 1\n%s%s", key, code, out, errOut)
				case !strings.Contains(errOut, "damaged") && !strings.Contains(errOut, "could not be folded"):
					t.Errorf("mesh %s: exit 1, but stderr does not say the store is damaged: %q", key, errOut)
				default:
					failedExits++
				}
			}
		})
	}
	t.Logf("damaged stores: %d runs exited 1 naming the damage, %d exited 0 with the undamaged store's output", failedExits, sameOutput)
}

// TestDamagedStoreChildProcess runs mesh's main in child processes on
// damaged stores: no child is ever killed by a signal (SIGSEGV, SIGBUS,
// SIGABRT from a fatal runtime error) or exits with a panic's code.
func TestDamagedStoreChildProcess(t *testing.T) {
	orig := upExample(t)
	good, err := os.ReadFile(filepath.Join(orig, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	ds := storeDamages(len(good), 6)
	for i, d := range ds {
		if !strings.HasPrefix(d.name, "truncated to 65536") && !strings.HasPrefix(d.name, "truncated to 20000") && !strings.HasPrefix(d.name, "bits") {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "events.db"), d.do(bytes.Clone(good)), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"status"}, {"store", "verify"}} {
				cmd := exec.Command(os.Args[0], append(args, "--data", dir)...)
				cmd.Env = append(os.Environ(), "MESH_TEST_MAIN=1")
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatalf("mesh %v: %v", args, err)
				}
				ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if ws.Signaled() {
					t.Errorf("mesh %v: killed by %v\n%s", args, ws.Signal(), out.String())
				}
				if c := ws.ExitStatus(); c != exitOK && c != exitFailed {
					t.Errorf("mesh %v: exit %d, want 0 or 1\n%s", args, c, out.String())
				}
			}
		})
	}
}

// A store written before records carried a checksum (testdata/layout1, made
// by `mesh node register a b`, `node adopt a`, `node set a port.store 6852`
// at commit c7f7a42) still opens and reads, and takes new records, which
// carry one.
func TestStoreWithoutChecksums(t *testing.T) {
	dir := t.TempDir()
	old, err := os.ReadFile("testdata/layout1/events.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.db"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	goldenCases(t, dir, []goldenCase{{"layout1-timeline", []string{"timeline"}, false, nil}})
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"store", "verify"}, "records: 4 at positions 1..4, each decoded and at its position; 0 with a checksum, all matching it (layout 1)"},
		{[]string{"node", "register", "c"}, ""},
		{[]string{"store", "verify"}, "records: 5 at positions 1..5, each decoded and at its position; 1 with a checksum, all matching it (layout 1)"},
		{[]string{"status"}, "c "},
	} {
		code, out, errOut := mesh(t, append(step.args, "--data", dir)...)
		if code != exitOK || !strings.Contains(out, step.want) {
			t.Fatalf("mesh %v: exit %d, want 0 and %q\n%s%s", step.args, code, step.want, out, errOut)
		}
	}
}
