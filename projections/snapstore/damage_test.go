package snapstore_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/boltstore"
	"meshplane/projections/snapstore"
)

// damage is one way to damage a copy of a file.
type damage struct {
	name string
	do   func([]byte) []byte
}

// fileDamages are truncations at cuts offsets spread over a file of size
// bytes (page boundaries and the bytes either side of them among them),
// and bit flips at flips seeds: 1 to 4 bits, half of the seeds aiming at
// the first bytes of a 4 KiB page (a bbolt page's header and element
// table), within the first used bytes of the file.
func fileDamages(size, used, cuts, flips int) []damage {
	var ds []damage
	offs := []int{0, 1, 16, 100, 4095, 4096, 4097, 8192, 12288, 16383, size / 2, size - 4096, size - 4095, size - 100, size - 1}
	for i := 0; len(offs) < cuts; i++ {
		offs = append(offs, (i*7919+size/3)%size)
	}
	seen := map[int]bool{}
	for _, n := range offs[:cuts] {
		if n < 0 || n >= size || seen[n] {
			continue
		}
		seen[n] = true
		ds = append(ds, damage{fmt.Sprintf("truncated to %d", n), func(b []byte) []byte { return b[:n] }})
	}
	used = min(used, size)
	for seed := range uint64(flips) {
		ds = append(ds, damage{fmt.Sprintf("bits flipped, seed %d", seed), func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(seed, 17))
			for range 1 + rng.IntN(4) {
				off := rng.IntN(used)
				if seed%2 == 1 {
					off = min(used-1, (off/4096)*4096+rng.IntN(16+16*8))
				}
				b[off] ^= 1 << rng.IntN(8)
			}
			return b
		}})
	}
	return ds
}

// copyCache copies the cache files of dir into a new directory.
func copyCache(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// openSafe is Open, a panic made a test failure.
func openSafe(t *testing.T, store events.Store, dir string) (l *snapstore.Local) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Open panicked: %v", r)
		}
	}()
	l, err := snapstore.Open(context.Background(), store, events.NewRegistry(), dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// TestOpenDamagedFiles damages copies of a data directory's cache files,
// each at many offsets and seeds, and opens each: Open never fails or
// panics, the answers are those of a replay from 0, and the call after
// resumes from the files it left (sound: no note, not from 0).
//
// It then does the same with timeline.db's damage hidden from the stamp
// (the snapshot is stamped anew with the damaged file, as if the disk had
// flipped the bits without a write, which no stamp can see): nothing
// panics or faults there either, Open never fails, and a call that finds
// the damage while reading passes the file over and answers right. An
// answer can be wrong there (bbolt's structure is not proven before it
// reads a file the stamp vouches for; see check.go): those are counted.
func TestOpenDamagedFiles(t *testing.T) {
	defer snapstore.SetFlush(5000, 100)() // one flush per fold from 0: fewer fsyncs
	ctx := context.Background()
	evs := history(t, 500)
	store := storeOf(t, evs, len(evs))
	want, pos := replay(t, store)
	orig := t.TempDir()
	l := openSafe(t, store, orig)
	if len(l.Notes) != 1 || l.From != 0 {
		t.Fatalf("first open: notes %q, from %d; want one note, from 0", l.Notes, l.From)
	}
	l.Close()
	sizes, used := map[string]int{}, map[string]int{}
	for _, name := range []string{snapstore.SnapshotFile, snapstore.TimelineFile} {
		fi, err := os.Stat(filepath.Join(orig, name))
		if err != nil {
			t.Fatal(err)
		}
		sizes[name], used[name] = int(fi.Size()), int(fi.Size())
	}
	// timeline.db's pages in use (bbolt grows the file ahead of them).
	f, err := os.Open(filepath.Join(orig, snapstore.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	c, err := boltstore.CheckFile(f, true)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	used[snapstore.TimelineFile] = int(c.InUse)
	// The cases: every damage of each file, and timeline.db's with the
	// stamp made to match.
	type tc struct {
		file    string
		d       damage
		stamped bool
	}
	var cases []tc
	for _, name := range []string{snapstore.TimelineFile, snapstore.SnapshotFile} {
		for _, d := range fileDamages(sizes[name], used[name], 20, 20) {
			cases = append(cases, tc{name, d, false})
		}
	}
	for _, d := range fileDamages(sizes[snapstore.TimelineFile], used[snapstore.TimelineFile], 4, 10) {
		cases = append(cases, tc{snapstore.TimelineFile, d, true})
	}
	var noted, quiet, hiddenWrong int
	start := time.Now()
	for _, c := range cases {
		name := c.file + "/" + c.d.name
		if c.stamped {
			name = "stamp hidden/" + name
		}
		t.Run(name, func(t *testing.T) {
			dir := copyCache(t, orig)
			path := filepath.Join(dir, c.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, c.d.do(bytes.Clone(b)), 0o600); err != nil {
				t.Fatal(err)
			}
			if c.stamped {
				// A file whose meta pages fail cannot be stamped: it is
				// then the unstamped case (replaced at open).
				_ = snapstore.Restamp(ctx, store, dir)
			}
			l := openSafe(t, store, dir)
			if len(l.Notes) > 0 {
				noted++
			} else {
				quiet++
			}
			if c.stamped {
				if d := differs(want, pos, l, 4, true); d != "" {
					hiddenWrong++
					l.Close()
					t.Logf("a wrong answer from damage the stamp hid: %s; the whole check says: %v", d, snapstore.CheckWhole(ctx, dir))
					return // the damage stays hidden: the next call answers the same
				}
			} else {
				sameAs(t, want, pos, l, 4)
			}
			passedOver := strings.Contains(strings.Join(l.Notes, "\n"), "passed over")
			if err := l.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			// What the call left is sound: the next one resumes from it
			// (after one more fold from 0, if this call passed
			// timeline.db over while answering: it removed the file).
			next := openSafe(t, store, dir)
			if passedOver && next.From == 0 {
				next.Close()
				next = openSafe(t, store, dir)
			}
			defer next.Close()
			if len(next.Notes) > 0 || next.From == 0 {
				t.Errorf("the call after: notes %q, from %d; want none, resumed", next.Notes, next.From)
			}
			if d := differs(want, pos, next, 3, false); d != "" {
				t.Errorf("the call after: %s", d)
			}
		})
	}
	t.Logf("%d damaged copies in %v: %d passed over with a note, %d harmless (free space, unused bytes); %d wrong answers where the stamp was made to hide the damage",
		len(cases), time.Since(start).Round(time.Millisecond), noted, quiet, hiddenWrong)
}

// A timeline.db the snapshot's stamp vouches for is used without the
// whole check; one changed since (here only its times) is checked whole
// once, kept when sound, and stamped again.
func TestStampSparesTheWholeCheck(t *testing.T) {
	defer snapstore.SetFlush(5000, 100)()
	evs := history(t, 600)
	store := storeOf(t, evs, len(evs))
	dir := t.TempDir()
	openSafe(t, store, dir).Close()
	checks := func() uint64 {
		before := snapstore.WholeChecks()
		l := openSafe(t, store, dir)
		defer l.Close()
		if len(l.Notes) > 0 || l.From == 0 {
			t.Fatalf("notes %q, from %d; want none, resumed", l.Notes, l.From)
		}
		return snapstore.WholeChecks() - before
	}
	if n := checks(); n != 0 {
		t.Errorf("the file as the snapshot recorded it: checked whole %d times, want 0", n)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, snapstore.TimelineFile), later, later); err != nil {
		t.Fatal(err)
	}
	if n := checks(); n != 1 {
		t.Errorf("a file changed since: checked whole %d times, want 1", n)
	}
	if n := checks(); n != 0 {
		t.Errorf("the call after: checked whole %d times, want 0 (stamped again)", n)
	}
}

// Damage a read finds in a timeline.db the stamp vouched for: the query
// passes the file over with a note, answers from every event folded in
// memory, and removes the file; the call after rebuilds it and the one
// after that resumes.
func TestDamageFoundByAQuery(t *testing.T) {
	defer snapstore.SetFlush(5000, 100)()
	ctx := context.Background()
	evs := history(t, 600)
	store := storeOf(t, evs, len(evs))
	want, pos := replay(t, store)
	dir := t.TempDir()
	openSafe(t, store, dir).Close()
	if err := snapstore.SpoilEntry(dir, 5); err != nil {
		t.Fatal(err)
	}
	if err := snapstore.Restamp(ctx, store, dir); err != nil {
		t.Fatal(err)
	}
	l := openSafe(t, store, dir)
	if len(l.Notes) > 0 || l.From == 0 {
		t.Fatalf("open: notes %q, from %d; want none, resumed (the damage is not read yet)", l.Notes, l.From)
	}
	sameAs(t, want, pos, l, 20)
	if notes := strings.Join(l.Notes, "\n"); !strings.Contains(notes, "entries block at 1: checksum mismatch") || !strings.Contains(notes, "passed over") || !strings.Contains(notes, "removed it") {
		t.Errorf("notes %q, want one saying the block of entry 5 was damaged, timeline.db passed over and removed", l.Notes)
	}
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, snapstore.TimelineFile)); err == nil {
		t.Errorf("the damaged timeline.db was not removed")
	}
	again := openSafe(t, store, dir)
	if again.From != 0 || !strings.Contains(strings.Join(again.Notes, "\n"), "no timeline index") {
		t.Errorf("the call after: notes %q, from %d; want it to rebuild, saying why", again.Notes, again.From)
	}
	sameAs(t, want, pos, again, 20)
	again.Close()
	last := openSafe(t, store, dir)
	defer last.Close()
	if len(last.Notes) > 0 || last.From == 0 {
		t.Errorf("the call after that: notes %q, from %d; want none, resumed", last.Notes, last.From)
	}
}
