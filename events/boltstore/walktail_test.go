package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"meshplane/events"
)

// firstEventsLeaf returns the offset of the leaf page of events holding
// position 1 (a leaf whose first key is position 1 with a record as its
// value of more than 64 bytes; a stream's bucket keys version 1 to an
// 8-byte position, the chain position 1 to a 32-byte value).
func firstEventsLeaf(t *testing.T, file []byte) int {
	t.Helper()
	const pageSize = 4096
	for off := 2 * pageSize; off+pageSize <= len(file); off += pageSize {
		p := file[off:]
		if ne.Uint16(p[8:]) != flagLeaf || ne.Uint16(p[10:]) == 0 {
			continue
		}
		e := pageHeaderSize
		pos, ksize, vsize := int(ne.Uint32(p[e+4:])), int(ne.Uint32(p[e+8:])), int(ne.Uint32(p[e+12:]))
		if ksize == 8 && vsize > 64 && binary.BigEndian.Uint64(p[e+pos:]) == 1 { // a record, not a chain value (32 bytes) nor a stream's position
			return off
		}
	}
	t.Fatal("no leaf of events holds position 1")
	return 0
}

// A read-only store reads the last events of a file whose first events'
// page is damaged: it walks only what the read reaches. A read that
// reaches the damage, a ReadStream (which walks the whole file) and a
// writer's Open all fail with ErrDamaged.
func TestReadOnlyWalksWhatItReads(t *testing.T) {
	ctx := context.Background()
	orig, want := fixture(t)
	file, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	off := firstEventsLeaf(t, file)
	ne.PutUint64(file[off:], 1<<40) // the page says it is another page
	path := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, ReadOnly())
	if err != nil {
		t.Fatalf("read-only Open of a file damaged in its first events: %v", err)
	}
	defer s.Close()
	for _, after := range []int{len(want) - 1, len(want) - 20} {
		got, err := s.ReadAll(ctx, uint64(after), 0)
		if err != nil || !reflect.DeepEqual(got, want[after:]) {
			t.Errorf("ReadAll after %d: %d events, %v; want the last %d", after, len(got), err, len(want)-after)
		}
	}
	if got, err := s.ReadAll(ctx, 0, 0); !errors.Is(err, events.ErrDamaged) {
		t.Errorf("ReadAll from 0 over the damaged page: %d events, %v; want ErrDamaged", len(got), err)
	}
	if got, err := s.ReadStream(ctx, want[len(want)-1].Stream, 0, 0); !errors.Is(err, events.ErrDamaged) {
		t.Errorf("ReadStream: %d events, %v; want ErrDamaged (the whole file is walked first)", len(got), err)
	}
	s.Close()
	if w, err := Open(path); !errors.Is(err, events.ErrDamaged) {
		if err == nil {
			w.Close()
		}
		t.Errorf("Open for writing: %v, want ErrDamaged (a writer walks the whole file)", err)
	}
}

// TestDamagedFilesReadTail is TestDamagedFiles for the reads of a CLI call
// resuming from a snapshot: a read-only Open, then ReadAll from near the
// end, then from further back. Each read fails with ErrDamaged or returns
// what the undamaged store does; none panics, faults or loops.
func TestDamagedFilesReadTail(t *testing.T) {
	ctx := context.Background()
	orig, want := fixture(t)
	good, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, d := range damages(len(good), 80) {
		t.Run(d.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("%d.db", i))
			file := d.do(append([]byte(nil), good...))
			if err := os.WriteFile(path, file, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, ReadOnly())
			if err != nil {
				if !errors.Is(err, events.ErrDamaged) {
					t.Errorf("Open: %v, want ErrDamaged", err)
				}
				return
			}
			defer s.Close()
			for _, after := range []int{len(want) - 1, len(want) - 30, len(want) / 2, len(want) - 30, 0} {
				got, err := s.ReadAll(ctx, uint64(after), 0)
				switch {
				case err != nil && !errors.Is(err, events.ErrDamaged):
					t.Errorf("ReadAll after %d: %v, want ErrDamaged", after, err)
				case err == nil && !reflect.DeepEqual(got, want[after:]):
					t.Errorf("ReadAll after %d returned wrong data without an error: %d events, want %d", after, len(got), len(want)-after)
				}
			}
			if bytes.Equal(file, good) {
				t.Errorf("the damage changed nothing")
			}
		})
	}
}

// eventsLeafOf returns the offset of the leaf page of events whose first
// key is position pos (0 when no leaf starts there).
func eventsLeafOf(file []byte, pos uint64) int {
	return leafOf(file, pos, func(vsize int) bool { return vsize > 64 })
}

// chainLeafOf is eventsLeafOf for the chain's leaves.
func chainLeafOf(file []byte, pos uint64) int {
	return leafOf(file, pos, func(vsize int) bool { return vsize == chainValueSize })
}

// leafOf returns the offset of a leaf page whose first key is position pos
// and whose first value's size is one value wants.
func leafOf(file []byte, pos uint64, value func(int) bool) int {
	const pageSize = 4096
	for off := 2 * pageSize; off+pageSize <= len(file); off += pageSize {
		p := file[off:]
		if ne.Uint16(p[8:]) != flagLeaf || ne.Uint16(p[10:]) == 0 {
			continue
		}
		e := pageHeaderSize
		kpos, ksize, vsize := int(ne.Uint32(p[e+4:])), int(ne.Uint32(p[e+8:])), int(ne.Uint32(p[e+12:]))
		if ksize == 8 && value(vsize) && e+kpos+8 <= pageSize && binary.BigEndian.Uint64(p[e+kpos:]) == pos {
			return off
		}
	}
	return 0
}

// A bounded read (ReadAll with a limit) of a read-only store walks only the
// pages that hold its positions, of events and of the chain: early events
// read while a later page of either is damaged, and a bounded read that reaches the damage, or an unbounded one
// before it, fails with ErrDamaged.
func TestBoundedReadWalksItsRange(t *testing.T) {
	for name, leafOf := range map[string]func([]byte, uint64) int{"events": eventsLeafOf, "chain": chainLeafOf} {
		t.Run(name, func(t *testing.T) { boundedReadWalksItsRange(t, leafOf) })
	}
}

func boundedReadWalksItsRange(t *testing.T, leafOf func([]byte, uint64) int) {
	ctx := context.Background()
	orig, want := fixture(t)
	file, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	// A leaf starting in the middle of the history.
	var off int
	var mid uint64
	for p := uint64(len(want) / 2); p < uint64(len(want)) && off == 0; p++ {
		if off = leafOf(file, p); off != 0 {
			mid = p
		}
	}
	if off == 0 || mid < 20 {
		t.Fatalf("no leaf of events starts in the middle of %d events", len(want))
	}
	ne.PutUint64(file[off:], 1<<40) // the page says it is another page
	path := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, ReadOnly())
	if err != nil {
		t.Fatalf("read-only Open: %v", err)
	}
	defer s.Close()
	for _, after := range []uint64{0, 3, mid / 2} {
		got, err := s.ReadAll(ctx, after, 5)
		if err != nil || !reflect.DeepEqual(got, want[after:after+5]) {
			t.Errorf("ReadAll(%d, 5), before the damaged page at %d: %d events, %v", after, mid, len(got), err)
		}
	}
	if got, err := s.ReadAll(ctx, mid-3, 6); !errors.Is(err, events.ErrDamaged) {
		t.Errorf("ReadAll(%d, 6) across the damaged page: %d events, %v; want ErrDamaged", mid-3, len(got), err)
	}
	if got, err := s.ReadAll(ctx, 1, 0); !errors.Is(err, events.ErrDamaged) {
		t.Errorf("ReadAll(1, all) over the damaged page: %d events, %v; want ErrDamaged", len(got), err)
	}
}

// A writer opened with WalkInBackground on a file damaged in its first
// events: Open returns, the last events read, the walk finds the damage,
// and the append fails with it, writing nothing.
func TestWalkInBackgroundDamaged(t *testing.T) {
	ctx := context.Background()
	orig, want := fixture(t)
	file, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	ne.PutUint64(file[firstEventsLeaf(t, file):], 1<<40) // the page says it is another page
	path := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, WalkInBackground())
	if err != nil {
		t.Fatalf("Open walking in the background: %v", err)
	}
	defer s.Close()
	if got, err := s.ReadAll(ctx, uint64(len(want)-5), 0); err != nil || !reflect.DeepEqual(got, want[len(want)-5:]) {
		t.Errorf("ReadAll of the last 5: %d events, %v", len(got), err)
	}
	if err := s.Walked(ctx); !errors.Is(err, events.ErrDamaged) {
		t.Errorf("Walked: %v, want ErrDamaged", err)
	}
	for range 2 {
		if _, err := s.Append(ctx, "node-n0", events.Any, evN(1, "after")...); !errors.Is(err, events.ErrDamaged) {
			t.Errorf("Append: %v, want ErrDamaged", err)
		}
	}
	if got, err := s.ReadAll(ctx, 0, 0); !errors.Is(err, events.ErrDamaged) {
		t.Errorf("ReadAll from 0: %d events, %v; want ErrDamaged", len(got), err)
	}
	s.Close()
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, file) {
		t.Errorf("the damaged file changed (%v)", err)
	}
}

// A writer opened with WalkInBackground on a whole file reads and appends
// as one that walked first; its walk passes. A file that must be changed to
// open (created here) is walked at Open.
func TestWalkInBackground(t *testing.T) {
	ctx := context.Background()
	orig, want := fixture(t)
	s, err := Open(orig, WalkInBackground())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadAll(ctx, uint64(len(want)-3), 0); err != nil || !reflect.DeepEqual(got, want[len(want)-3:]) {
		t.Errorf("ReadAll of the last 3: %d events, %v", len(got), err)
	}
	added, err := s.Append(ctx, "node-n1", events.Any, evN(2, "after")...)
	if err != nil || added[1].Position != uint64(len(want)+2) {
		t.Fatalf("Append: %v, %v", added, err)
	}
	if err := s.Walked(ctx); err != nil {
		t.Errorf("Walked: %v", err)
	}
	got, err := s.ReadStream(ctx, "node-n1", 0, 0)
	if err != nil || got[len(got)-1].Position != added[1].Position {
		t.Errorf("ReadStream after the append: %d events, %v", len(got), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, orig); err != nil {
		t.Fatal(err)
	}
	re, err := Open(orig)
	if err != nil {
		t.Fatalf("Open walking first after: %v", err)
	}
	if all, err := re.ReadAll(ctx, 0, 0); err != nil || len(all) != len(want)+2 {
		t.Errorf("ReadAll after reopening: %d events, %v", len(all), err)
	}
	re.Close()

	fresh, err := Open(filepath.Join(t.TempDir(), "new.db"), WalkInBackground())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.Append(ctx, "node-n1", events.Any, evN(1, "first")...); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Walked(ctx); err != nil {
		t.Errorf("Walked on a new file: %v", err)
	}
}
