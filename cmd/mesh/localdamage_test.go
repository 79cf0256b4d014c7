package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"meshplane/agent"
	"meshplane/agent/agentd"
	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/internal/meshtest"
	"meshplane/projections/snapstore"
	"meshplane/storeverify"
)

// localDamageCommands are the read verbs the damage test runs over
// damaged cache files, grouped: the verbs of a group run in order on one
// copy of the damaged directory. A verb that reads the caches may repair
// them (rebuild them, or remove the damaged file), so it comes last in its
// group, after those that only read (store verify) or never look at the
// caches (why, roster --history fold every event, so they run on every
// fourth copy only). The first group runs on every damaged copy; the
// others in turn, one per copy (each then meets a dozen damages of the two
// files, truncations and flips), to keep the test's time within the
// suite's.
var localDamageCommands = [][][]string{
	{{"store", "verify"}, {"why", "node-001", "mod-000-c0"}, {"roster", "--history", "node-001"}, {"status"}},
	{{"timeline", "-o", "json"}},
	{{"status", "-o", "json"}},
	{{"timeline", "--node", "node-001", "--limit", "20"}},
	{{"node", "show", "node-001"}},
	{{"churn"}},
	{{"rebuild"}},
}

// localDamages are truncations at 20 offsets spread over a file of size
// bytes, and bit flips at 20 seeds (1 to 3 bits in the first used bytes;
// odd seeds aim at the first bytes of a 4 KiB page: bbolt's page headers
// and element tables).
func localDamages(size, used int) []damage {
	var ds []damage
	offs := []int{0, 1, 16, 100, 4095, 4096, 8192, 12288, 16384, size / 2, size - 4096, size - 1}
	for i := 0; len(offs) < 20; i++ {
		offs = append(offs, (i*7919+size/5)%size)
	}
	seen := map[int]bool{}
	for _, n := range offs {
		if n >= 0 && n < size && !seen[n] {
			seen[n] = true
			ds = append(ds, damage{fmt.Sprintf("truncated to %d", n), func(b []byte) []byte { return b[:n] }})
		}
	}
	used = min(used, size)
	for seed := range uint64(20) {
		ds = append(ds, damage{fmt.Sprintf("bits flipped, seed %d", seed), func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(seed, 3))
			for range 1 + rng.IntN(3) {
				off := rng.IntN(used)
				if seed%2 == 1 {
					off = min(used-1, (off/4096)*4096+rng.IntN(16+16*6))
				}
				b[off] ^= 1 << rng.IntN(8)
			}
			return b
		}})
	}
	return ds
}

// localDataDir is a data directory of a generated mesh whose cache files
// (projections.snap, timeline.db) a local query saved, and the size of
// each file and of the part of it in use.
func localDataDir(t *testing.T) (dir string, size, used map[string]int) {
	t.Helper()
	defer smallSnapshots()()
	dir = t.TempDir()
	appendBolt(t, dir, simHistory(t, 260))
	if code, _, stderr := mesh(t, "status", "--data", dir); code != exitOK || !strings.Contains(stderr, "no snapshot") {
		t.Fatalf("status: exit %d, %q; want the snapshot saved", code, stderr)
	}
	size, used = map[string]int{}, map[string]int{}
	for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		size[name], used[name] = int(fi.Size()), int(fi.Size())
	}
	f, err := os.Open(filepath.Join(dir, snapstore.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := boltstore.CheckFile(f, true)
	if err != nil {
		t.Fatal(err)
	}
	used[snapstore.TimelineFile] = int(c.InUse)
	return dir, size, used
}

// copyData copies the files of the data directory from into a new one,
// replacing file's bytes by b when file is not "".
func copyData(t *testing.T, from, file string, b []byte) string {
	t.Helper()
	to := t.TempDir()
	names, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		data := b
		if n.Name() != file {
			if data, err = os.ReadFile(filepath.Join(from, n.Name())); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(to, n.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// normalOutput is out with what differs between two copies of one data
// directory replaced: its path, sizes and durations.
func normalOutput(out, dir string) string {
	return sizesRE.ReplaceAllString(durationRE.ReplaceAllString(strings.ReplaceAll(out, dir, "DATA"), "in DURATION"), "N$1")
}

// TestDamagedLocalFiles damages copies of a data directory's cache files
// (timeline.db and projections.snap: 20 truncations and 20 bit flips
// each) and runs every local read verb on each, in process: none panics,
// none exits 2, and every one answers exactly what it answers on the
// undamaged directory, with the same exit code (the damage passed over
// with a note on stderr), except store verify, which may instead exit 1
// naming the damaged file.
func TestDamagedLocalFiles(t *testing.T) {
	orig, size, used := localDataDir(t)
	defer smallSnapshots()()
	type answer struct {
		code int
		out  string
	}
	want := map[string]answer{}
	for _, group := range localDamageCommands {
		dir := copyData(t, orig, "", nil)
		for _, args := range group {
			code, out, errOut := runSafe(t, append(args, "--data", dir)...)
			if code != exitOK && code != exitRejected {
				t.Fatalf("mesh %v on the undamaged directory: exit %d\n%s%s", args, code, out, errOut)
			}
			want[strings.Join(args, " ")] = answer{code, normalOutput(out, dir)}
		}
	}
	var noted, verifyFound, runs int
	start := time.Now()
	for _, file := range []string{snapstore.TimelineFile, snapstore.SnapshotFile} {
		good, err := os.ReadFile(filepath.Join(orig, file))
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range localDamages(size[file], used[file]) {
			t.Run(file+"/"+d.name, func(t *testing.T) {
				damaged := d.do(bytes.Clone(good))
				turn := 1 + (i+len(file))%(len(localDamageCommands)-1)
				for g, group := range localDamageCommands {
					if g != 0 && g != turn {
						continue
					}
					dir := copyData(t, orig, file, damaged)
					for _, args := range group {
						if (args[0] == "why" || args[0] == "roster") && i%4 != 0 {
							continue
						}
						key := strings.Join(args, " ")
						code, out, errOut := runSafe(t, append(args, "--data", dir)...)
						out = normalOutput(out, dir)
						runs++
						if strings.Contains(errOut, "mesh: note: ") {
							noted++
						}
						w := want[key]
						switch {
						case code == w.code && out == w.out:
						case key == "store verify" && code == w.code && withoutRestamp(out) == w.out:
							// Damage the checks cannot see (a flip in a
							// free page, a cut of trailing free pages) is
							// sound all the same: verify says only that the
							// file is not the one the snapshot stamped.
						case key == "store verify" && code == exitFailed && strings.Contains(out, "DAMAGED: ") &&
							strings.Contains(errOut, storeverify.ErrCacheDamaged.Error()):
							verifyFound++
						default:
							t.Errorf("mesh %s: exit %d, want %d with the undamaged directory's answer:\n%s%s\n--- want\n%s", key, code, w.code, out, errOut, w.out)
						}
					}
				}
			})
		}
	}
	t.Logf("%d runs over damaged copies in %v: %d said a note on stderr; store verify named the damage %d times",
		runs, time.Since(start).Round(time.Millisecond), noted, verifyFound)
}

// TestDamagedLocalFilesChildProcess runs mesh's main in child processes
// over timeline.db cut short at every offset of the damage test, and over
// some of its bit flips: no child is ever killed by a signal (a SIGBUS on
// the memory map of a file shorter than bbolt maps), none exits other than
// 0, and each answers as on the undamaged directory.
func TestDamagedLocalFilesChildProcess(t *testing.T) {
	orig, size, used := localDataDir(t)
	good, err := os.ReadFile(filepath.Join(orig, snapstore.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	child := func(dir string, args ...string) (int, string, string) {
		cmd := exec.Command(meshtest.Binary(t), append(args, "--data", dir)...) // without -race: it starts fast
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("mesh %v: %v", args, err)
		}
		if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
			t.Errorf("mesh %v: killed by %v\n%s", args, ws.Signal(), errOut.String())
			return -1, "", errOut.String()
		}
		return cmd.ProcessState.ExitCode(), normalOutput(out.String(), dir), errOut.String()
	}
	queries := [][]string{{"timeline", "-o", "json"}, {"status"}}
	want := map[int]string{}
	for i, q := range queries {
		dir := copyData(t, orig, "", nil)
		code, out, errOut := child(dir, q...)
		if code != exitOK {
			t.Fatalf("mesh %v on the undamaged directory: exit %d\n%s", q, code, errOut)
		}
		want[i] = out
	}
	for i, d := range localDamages(size[snapstore.TimelineFile], used[snapstore.TimelineFile]) {
		if strings.HasPrefix(d.name, "bits") && i%4 != 0 {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			q := i % len(queries)
			dir := copyData(t, orig, snapstore.TimelineFile, d.do(bytes.Clone(good)))
			code, out, errOut := child(dir, queries[q]...)
			if code != exitOK || out != want[q] {
				t.Errorf("mesh %v: exit %d, want 0 with the undamaged directory's answer\n%s\n--- stderr\n%s", queries[q], code, out, errOut)
			}
		})
	}
}

// store verify checks the cache files beside the store: sound ones are
// said to be so (exit 0); a damaged one is named, with what rebuilds it,
// and exits 1; a stale one (of another history) is said to be rebuilt by
// the next query, and is no failure.
func TestStoreVerifyCaches(t *testing.T) {
	orig, _, _ := localDataDir(t)
	code, out, errOut := mesh(t, "store", "verify", "--data", orig)
	if code != exitOK || strings.Count(out, "sound: local queries resume from it") != 2 {
		t.Fatalf("sound caches: exit %d\n%s%s", code, out, errOut)
	}

	snap, err := os.ReadFile(filepath.Join(orig, snapstore.SnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	snap[len(snap)/2] ^= 1
	dir := copyData(t, orig, snapstore.SnapshotFile, snap)
	code, out, errOut = mesh(t, "store", "verify", "--data", dir)
	if code != exitFailed || !strings.Contains(out, "DAMAGED: ") || !strings.Contains(out, "checksum mismatch") ||
		!strings.Contains(errOut, storeverify.ErrCacheDamaged.Error()+": "+snapstore.SnapshotFile) || !strings.Contains(errOut, "nothing is lost") {
		t.Errorf("a damaged snapshot: exit %d, want 1 naming it\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "the next query rebuilds it: the snapshot is missing or not used: timeline.db is rebuilt with it") {
		t.Errorf("a damaged snapshot: timeline.db is not said to be rebuilt with it\n%s", out)
	}

	// The caches of another store's history.
	other := t.TempDir()
	appendBolt(t, other, simHistory(t, 260))
	dir = copyData(t, orig, "", nil)
	for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	restore := smallSnapshots()
	if code, _, errOut := mesh(t, "status", "--data", other); code != exitOK {
		t.Fatalf("status: %d %s", code, errOut)
	}
	restore()
	for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		b, err := os.ReadFile(filepath.Join(other, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = mesh(t, "store", "verify", "--data", dir)
	if code != exitOK || !strings.Contains(out, "another history") || !strings.Contains(out, "the next query rebuilds it") {
		t.Errorf("caches of another history: exit %d, want 0, saying the next query rebuilds them\n%s%s", code, out, errOut)
	}
}

// store verify --agent-data checks an agent's outbox, changing nothing: a
// sound one exits 0; a damaged report's record is named (its line of the
// log), exit 1, and left where it is (the agent copies it aside itself).
func TestStoreVerifyAgentData(t *testing.T) {
	dir := t.TempDir()
	box, err := agent.OpenOutbox(filepath.Join(dir, agentd.OutboxDir))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r := agent.Report{Outcome: events.ApplyReported{Node: "n1", Declaration: fmt.Sprintf("n1/%d", i+1), ApplyID: events.NewID().String()}}
		if err := box.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := box.SaveState(agent.State{Made: []string{"/srv/a"}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mesh(t, "store", "verify", "--agent-data", dir)
	if code != exitOK || !strings.Contains(out, "reports kept: 2, each with a matching checksum") || !strings.Contains(out, "state: sound") {
		t.Fatalf("a sound outbox: exit %d\n%s%s", code, out, errOut)
	}
	// A bit flipped in the second report's record (the log's third line).
	path := filepath.Join(dir, agentd.OutboxDir, "outbox.log")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	at := len(lines[0]) + len(lines[1]) + len(lines[2])/2
	b[at] ^= 4
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = mesh(t, "store", "verify", "--agent-data", dir)
	if code != exitFailed || !strings.Contains(out, "outbox.log: line 3 ") || !strings.Contains(errOut, storeverify.ErrAgentDataDamaged.Error()) {
		t.Errorf("a damaged report: exit %d, want 1 naming it\n%s%s", code, out, errOut)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, b) {
		t.Errorf("store verify changed the damaged report: %v", err)
	}
	if code, _, errOut := mesh(t, "store", "verify", "--agent-data", t.TempDir()); code != exitFailed || !strings.Contains(errOut, "no agent outbox at") {
		t.Errorf("no outbox: exit %d, %q", code, errOut)
	}
}

// withoutRestamp is store verify's output without its note that a cache
// file is not the one the snapshot stamped (snapstore's verify): the note
// a damaged copy whose damage changed nothing the checks read adds to the
// undamaged directory's answer.
func withoutRestamp(out string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		if !strings.Contains(line, "not the file the snapshot recorded (changed or copied since)") {
			b.WriteString(line)
		}
	}
	return b.String()
}
