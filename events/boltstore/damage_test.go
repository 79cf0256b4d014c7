package boltstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"meshplane/events"
)

// fixture writes a store of several streams, big enough for branch pages
// and overflow-free leaves in every bucket, and returns its path and what
// ReadAll gives.
func fixture(t *testing.T) (string, []events.Event) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 120 {
		stream := fmt.Sprintf("node-n%d", i%4)
		batch := make([]events.Event, 3)
		for j := range batch {
			batch[j] = ev("test.n", fmt.Sprintf(`{"i":%d,"j":%d,"pad":%q}`, i, j, strings.Repeat("x", 100+i%50)))
		}
		if _, err := s.Append(ctx, stream, events.Any, batch...); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, all
}

// A store of layout 1, written before records carried a checksum, opens and
// reads; new records get a checksum; verify says which have one.
func TestLayout1StillReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var old []events.Event
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketEvents, bucketStreams, bucketIDs, bucketMeta} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		sb, err := tx.Bucket(bucketStreams).CreateBucket([]byte("node-a"))
		if err != nil {
			return err
		}
		for i, e := range evN(3, "old") {
			e.Stream, e.Version, e.Position = "node-a", uint64(i+1), uint64(i+1)
			old = append(old, e)
			for _, put := range []error{
				tx.Bucket(bucketEvents).Put(u64key(e.Position), plainRecord(e)),
				sb.Put(u64key(e.Version), u64key(e.Position)),
				tx.Bucket(bucketIDs).Put(e.ID[:], u64key(e.Position)),
			} {
				if put != nil {
					return put
				}
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Put(metaLayout, u64key(layoutPlain)); err != nil {
			return err
		}
		return meta.Put(metaHead, u64key(3))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ctx := context.Background()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	added, err := s.Append(ctx, "node-a", events.Exactly(3), evN(2, "new")...)
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.ReadStream(ctx, "node-a", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := append(old, added...)
	if len(all) != len(want) {
		t.Fatalf("read %d events, want %d", len(all), len(want))
	}
	for i := range want {
		if !all[i].SameContent(want[i]) || all[i].Position != want[i].Position {
			t.Errorf("event %d: got %v, want %v", i, all[i], want[i])
		}
	}
	rep, err := Verify(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Layout != layoutPlain || rep.Records != 5 || rep.Checksummed != 2 {
		t.Errorf("verify: %+v, want ok, layout 1, 5 records of which 2 with a checksum", rep)
	}
}

func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	path, want := fixture(t)
	// Two read-only stores at once: the lock is shared.
	r1, err := Open(path, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := Open(path, ReadOnly())
	if err != nil {
		t.Fatalf("second read-only Open: %v", err)
	}
	defer r2.Close()
	for i, s := range []*Store{r1, r2} {
		got, err := s.ReadAll(ctx, 0, 0)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("store %d: ReadAll: %d events, %v", i+1, len(got), err)
		}
		if head, _ := s.Head(ctx); head != uint64(len(want)) {
			t.Errorf("store %d: head %d, want %d", i+1, head, len(want))
		}
		if _, err := s.Append(ctx, "node-x", events.Any, evN(1, "ro")...); !errors.Is(err, ErrReadOnly) {
			t.Errorf("store %d: Append: %v, want ErrReadOnly", i+1, err)
		}
	}
	// A writer waits for the readers.
	if w, err := Open(path, WithLockTimeout(20*time.Millisecond)); !errors.Is(err, ErrLocked) {
		if err == nil {
			w.Close()
		}
		t.Errorf("Open for writing beside readers: %v, want ErrLocked", err)
	}

	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := Open(missing, ReadOnly()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open of a missing file: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only Open created %s", missing)
	}
	// An empty file is damage, read-only or not, and stays empty.
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{{ReadOnly()}, nil} {
		if s, err := Open(empty, opts...); !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), "empty") {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open(%d options) of an empty file: %v, want ErrDamaged", len(opts), err)
		}
		if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
			t.Fatalf("the empty file was written: %v, %v", fi, err)
		}
	}
	rep, err := Verify(ctx, empty)
	if err != nil || rep.OK() {
		t.Errorf("Verify of an empty file: %+v, %v; want damage", rep, err)
	}
}

func TestVerifyClean(t *testing.T) {
	path, all := fixture(t)
	rep, err := Verify(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Records != len(all) || rep.Checksummed != len(all) || rep.IDs != len(all) ||
		rep.StreamEntries != len(all) || rep.Streams != 4 || rep.Head != uint64(len(all)) || rep.Layout != layoutChained ||
		rep.ChainStart != 1 || rep.Chained != len(all) {
		t.Errorf("verify of a clean store: %+v", rep)
	}
}

// damage is one way to damage a copy of the fixture.
type damage struct {
	name string
	do   func(b []byte) []byte
}

// damages are truncations at many offsets, and bit flips at many seeds: some
// anywhere in the file, some aimed at page headers and element tables.
func damages(size int, seeds int) []damage {
	var ds []damage
	offs := []int{0, 1, 16, 100, 4095, 4096, 8192, 8200, 12288, 16384, 20000, 32768, 40000, 65536, size - 4096, size - 1}
	for _, n := range offs {
		if n < 0 || n >= size {
			continue
		}
		ds = append(ds, damage{fmt.Sprintf("truncated to %d", n), func(b []byte) []byte { return b[:n] }})
	}
	for seed := range uint64(seeds) {
		ds = append(ds, damage{fmt.Sprintf("bits flipped, seed %d", seed), func(b []byte) []byte {
			rng := rand.New(rand.NewPCG(seed, 42))
			for range 1 + rng.IntN(4) {
				off := rng.IntN(len(b))
				if seed%2 == 0 { // aim at a page's header or first elements
					off = (off/4096)*4096 + rng.IntN(16+16*8)
				}
				b[off] ^= 1 << rng.IntN(8)
			}
			return b
		}})
	}
	return ds
}

// TestDamagedFiles damages copies of a store, and checks that Open, the
// reads, an append and Verify never panic, and never return wrong data:
// each read either fails with ErrDamaged or returns what the undamaged store
// does, and a store Verify passes reads exactly as the undamaged one.
func TestDamagedFiles(t *testing.T) {
	ctx := context.Background()
	orig, want := fixture(t)
	good, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	streams := map[string][]events.Event{}
	for _, e := range want {
		streams[e.Stream] = append(streams[e.Stream], e)
	}
	dir := t.TempDir()
	var caught, harmless int
	for i, d := range damages(len(good), 160) {
		t.Run(d.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("%d.db", i))
			if err := os.WriteFile(path, d.do(append([]byte(nil), good...)), 0o600); err != nil {
				t.Fatal(err)
			}
			wrong := false
			check := func(what string, got []events.Event, err error, want []events.Event) {
				t.Helper()
				switch {
				case err != nil && !errors.Is(err, events.ErrDamaged):
					t.Errorf("%s: %v, want ErrDamaged", what, err)
				case err != nil:
					wrong = true
				case !reflect.DeepEqual(got, want):
					t.Errorf("%s returned wrong data without an error: %d events, want %d", what, len(got), len(want))
				}
			}
			s, err := Open(path, ReadOnly())
			if err != nil {
				check("Open", nil, err, nil)
			} else {
				got, err := s.ReadAll(ctx, 0, 0)
				check("ReadAll", got, err, want)
				for name, evs := range streams {
					got, err := s.ReadStream(ctx, name, 0, 0)
					check("ReadStream "+name, got, err, evs)
				}
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}
			rep, err := Verify(ctx, path)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if rep.OK() && wrong {
				t.Errorf("Verify found no damage, but a read did")
			}
			if !rep.OK() {
				caught++
			} else {
				harmless++
			}
			// A writer on the damaged file: an error, or an append.
			// Walking in the background: damage the walk finds fails the
			// append, never lets it write.
			if i%3 == 0 {
				for k, opts := range [][]Option{nil, {WalkInBackground()}} {
					// A copy each: a store bbolt panicked in keeps its lock.
					path := fmt.Sprintf("%s.%d", path, k)
					if err := os.WriteFile(path, d.do(append([]byte(nil), good...)), 0o600); err != nil {
						t.Fatal(err)
					}
					if s, err := Open(path, opts...); err == nil {
						_, err := s.Append(ctx, "node-n0", events.Any, evN(2, "after")...)
						if err != nil && !errors.Is(err, events.ErrDamaged) {
							t.Errorf("Append (%d options): %v, want ErrDamaged or success", len(opts), err)
						}
						if werr := s.Walked(ctx); werr != nil && err == nil {
							t.Errorf("Append (%d options) succeeded on a file whose walk found %v", len(opts), werr)
						}
						s.Close()
					} else if !errors.Is(err, events.ErrDamaged) {
						t.Errorf("Open for writing (%d options): %v, want ErrDamaged", len(opts), err)
					}
				}
			}
		})
	}
	t.Logf("%d damaged copies: %d found damaged by verify, %d harmless (free space, unused page bytes)", caught+harmless, caught, harmless)
}

// FuzzOpenDamaged: whatever the file holds, Open, ReadAll and Verify never
// panic (nor fault, nor loop), and every error they give a file that is not
// a good store wraps ErrDamaged.
func FuzzOpenDamaged(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.db")
	s, err := Open(path)
	if err != nil {
		f.Fatal(err)
	}
	for i := range 40 {
		if _, err := s.Append(context.Background(), fmt.Sprintf("node-%d", i%3), events.Any, evN(2, "seed")...); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:20000])
	f.Add(good[:8192])
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte) {
		path := filepath.Join(dir, "fuzz.db")
		if err := os.WriteFile(path, file, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if s, err := Open(path, ReadOnly()); err != nil {
			if !errors.Is(err, events.ErrDamaged) {
				t.Fatalf("Open: %v, want ErrDamaged", err)
			}
		} else {
			// From the tail first (a call resuming from a snapshot walks
			// only that), then from the start.
			if head, err := s.Head(ctx); err == nil && head > 5 {
				if _, err := s.ReadAll(ctx, head-5, 0); err != nil && !errors.Is(err, events.ErrDamaged) {
					t.Fatalf("ReadAll after %d: %v, want ErrDamaged", head-5, err)
				}
			}
			if _, err := s.ReadAll(ctx, 0, 0); err != nil && !errors.Is(err, events.ErrDamaged) {
				t.Fatalf("ReadAll: %v, want ErrDamaged", err)
			}
			if _, err := s.ReadStream(ctx, "node-1", 0, 0); err != nil && !errors.Is(err, events.ErrDamaged) {
				t.Fatalf("ReadStream: %v, want ErrDamaged", err)
			}
			s.Close()
		}
		if _, err := Verify(ctx, path); err != nil {
			t.Fatalf("Verify: %v", err)
		}
	})
}
