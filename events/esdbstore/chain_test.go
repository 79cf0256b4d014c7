package esdbstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"meshplane/events"
	"meshplane/events/esdbstore"
	"meshplane/events/esdbstore/esdbdouble"
)

// writeTable appends chunks to the table stream table (of the prefix
// "mesh-") as a store would: chunk k at revision k.
func writeTable(t testing.TB, url, table string, chunks [][]byte) {
	t.Helper()
	raw := rawClient(t, url)
	for k, data := range chunks {
		var expected esdb.ExpectedRevision = esdb.NoStream{}
		if k > 0 {
			expected = esdb.StreamRevision{Value: uint64(k - 1)}
		}
		if _, err := raw.AppendToStream(ctxFor(t), "mesh-"+table, esdb.AppendToStreamOptions{ExpectedRevision: expected},
			esdb.EventData{EventID: events.NewID(), EventType: "$mesh-positions", ContentType: esdb.ContentTypeBinary, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
}

// chunksIn counts the events of a table stream.
func chunksIn(t testing.TB, url, table string) int {
	n := 0
	for _, r := range rawAll(t, rawClient(t, url)) {
		if r.StreamID == "mesh-"+table {
			n++
		}
	}
	return n
}

// unwritten appends n events through a store that writes no chunk, and
// returns it (open) and the events.
func unwritten(t *testing.T, url string, n int) (*esdbstore.Store, []events.Event) {
	old := openStore(t, url, esdbstore.WithChunk(1<<20))
	t.Cleanup(func() { old.Close() })
	return old, appendN(t, old, n)
}

// verifyChain checks the store's history with events.ChainVerifier
// (what mesh store verify --anchor does), against its own head.
func verifyChain(t *testing.T, s events.Store) events.ChainReport {
	t.Helper()
	head, err := s.ChainHead(ctxFor(t))
	if err != nil {
		t.Fatalf("ChainHead: %v", err)
	}
	all, err := s.ReadAll(ctxFor(t), 0, 0)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	v := events.NewChainVerifier(&head)
	for _, e := range all {
		v.Add(e)
	}
	return v.Report()
}

// TestChainFromAnOldTable: a store whose table an older build wrote (chunks
// of the format before the chain, in LegacyTableStream) opens: the open
// reads $all from the start, chains every position from 1, checks the old
// table's last chunk against $all, and writes the table in the current
// format; the next open resumes from its last chunk, chain and all.
func TestChainFromAnOldTable(t *testing.T) {
	const chunk, n = 8, 30
	d := startDouble(t, esdbdouble.Config{})
	old, want := unwritten(t, d.URL(), n)
	writeTable(t, d.URL(), esdbstore.LegacyTableStream, esdbstore.TableChunks(old, chunk, true, 0))
	old.Close()

	before := d.Traffic()
	s := openStore(t, d.URL(), esdbstore.WithChunk(chunk))
	if read := d.Traffic().All - before.All; read < n {
		t.Errorf("the first open read %d events of $all, want the whole log (%d)", read, n)
	}
	checkStore(t, s, want)
	r := verifyChain(t, s)
	if r.Err() != nil || r.Start != 1 || !r.AnchorChecked || r.Checked != n {
		t.Errorf("verify after the upgrade: %+v, %v; want chained from position 1 to %d", r, r.Err(), n)
	}
	head := r.Head
	s.Close()
	if got, legacy := chunksIn(t, d.URL(), esdbstore.TableStream), chunksIn(t, d.URL(), esdbstore.LegacyTableStream); got != n/chunk || legacy != n/chunk {
		t.Errorf("%d chunks in %s and %d in %s, want %d in each (the old table left as it was)",
			got, esdbstore.TableStream, legacy, esdbstore.LegacyTableStream, n/chunk)
	}

	before = d.Traffic()
	again := openStore(t, d.URL(), esdbstore.WithChunk(chunk))
	defer again.Close()
	if read, tail := d.Traffic().All-before.All, tailOf(t, d.URL(), want, chunk); read != tail || read > 2*chunk {
		t.Errorf("the second open read %d events of $all, want %d: the tail after the last chunk", read, tail)
	}
	if got, err := again.ChainHead(ctxFor(t)); err != nil || got.Chain != head.Chain || got.Position != n {
		t.Errorf("ChainHead after reopening: %s, %v; want %s", got, err, head)
	}
	more := mustAppend(t, again, "node-0", ev("test.after"))
	if r := verifyChain(t, again); r.Err() != nil || r.Start != 1 || r.Head.Chain != more[0].Chain {
		t.Errorf("verify after an append: %+v, %v", r, r.Err())
	}
}

// TestOldTableDisagreeing: an older build's table whose last chunk names an
// event $all does not hold there is damage, naming that chunk.
func TestOldTableDisagreeing(t *testing.T) {
	d := startDouble(t, esdbdouble.Config{})
	old, _ := unwritten(t, d.URL(), 20)
	chunks := esdbstore.TableChunks(old, 8, true, 0) // chunk 0: positions 1 to 8 of d
	old.Close()
	short := startDouble(t, esdbdouble.Config{})
	few, _ := unwritten(t, short.URL(), 5)
	few.Close()
	writeTable(t, short.URL(), esdbstore.LegacyTableStream, chunks[:1])
	_, err := esdbstore.Open(ctxFor(t), short.URL())
	if want := "mesh-" + esdbstore.LegacyTableStream + "@0"; !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open with an old table past $all: %v, want ErrDamaged naming %s", err, want)
	}
	other := startDouble(t, esdbdouble.Config{})
	more, _ := unwritten(t, other.URL(), 20)
	more.Close()
	writeTable(t, other.URL(), esdbstore.LegacyTableStream, chunks[:1]) // other ids
	_, err = esdbstore.Open(ctxFor(t), other.URL())
	if want := "mesh-" + esdbstore.LegacyTableStream + "@0"; !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open with an old table of other events: %v, want ErrDamaged naming %s", err, want)
	}
}

// TestWrongChainInTable: a chunk whose chain values disagree with what the
// reader computes from $all is damage, naming the chunk: at Open (its last
// entry, which the open reads again), and when a store finds another's
// chunk where it was to write its own. One wrong inside a chunk that no
// reader computed is found by verify, at its position.
func TestWrongChainInTable(t *testing.T) {
	chunk0 := "mesh-" + esdbstore.TableStream + "@0"
	t.Run("the last entry, at Open", func(t *testing.T) {
		d := startDouble(t, esdbdouble.Config{})
		old, _ := unwritten(t, d.URL(), 10)
		writeTable(t, d.URL(), esdbstore.TableStream, esdbstore.TableChunks(old, 8, false, 8))
		old.Close()
		_, err := esdbstore.Open(ctxFor(t), d.URL(), esdbstore.WithChunk(8))
		if !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), chunk0) || !strings.Contains(err.Error(), "chain") {
			t.Errorf("Open over a chunk with a wrong chain value at its end: %v, want ErrDamaged naming %s", err, chunk0)
		}
	})
	t.Run("another store's chunk", func(t *testing.T) {
		d := startDouble(t, esdbdouble.Config{})
		reader := openStore(t, d.URL(), esdbstore.WithChunk(8))
		defer reader.Close()
		old, _ := unwritten(t, d.URL(), 10)
		writeTable(t, d.URL(), esdbstore.TableStream, esdbstore.TableChunks(old, 8, false, 3))
		_, err := reader.Head(ctxFor(t))
		if !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), chunk0) || !strings.Contains(err.Error(), "chain") {
			t.Errorf("Head, taking another's chunk with a wrong chain value: %v, want ErrDamaged naming %s", err, chunk0)
		}
	})
	t.Run("a chunk before the last, read when needed", func(t *testing.T) {
		d := startDouble(t, esdbdouble.Config{})
		old, _ := unwritten(t, d.URL(), 18)
		writeTable(t, d.URL(), esdbstore.TableStream, esdbstore.TableChunks(old, 8, false, 8)) // chunk 0 ends with another value than chunk 1 follows
		old.Close()
		s := openStore(t, d.URL(), esdbstore.WithChunk(8))
		defer s.Close()
		_, err := s.ReadAll(ctxFor(t), 0, 0)
		if !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), chunk0) {
			t.Errorf("ReadAll through a chunk that does not end with the chain value the next one follows: %v, want ErrDamaged naming %s", err, chunk0)
		}
	})
	t.Run("inside a chunk: verify", func(t *testing.T) {
		d := startDouble(t, esdbdouble.Config{})
		old, _ := unwritten(t, d.URL(), 10)
		writeTable(t, d.URL(), esdbstore.TableStream, esdbstore.TableChunks(old, 8, false, 3))
		old.Close()
		s := openStore(t, d.URL(), esdbstore.WithChunk(8))
		defer s.Close()
		r := verifyChain(t, s)
		if !errors.Is(r.Err(), events.ErrChainBroken) || r.Break.Position != 3 {
			t.Errorf("verify of a table with a wrong chain value at position 3: %+v, %v", r, r.Err())
		}
	})
}

// TestChainBeyondTheTable: a store reading events another wrote since its
// last catch-up (beyond its table) computes their chain values as the
// writer did, in ReadAll and in Subscribe.
func TestChainBeyondTheTable(t *testing.T) {
	d := startDouble(t, esdbdouble.Config{})
	writer, reader := openStore(t, d.URL()), openStore(t, d.URL())
	defer writer.Close()
	defer reader.Close()
	want := appendN(t, writer, 12)
	got, err := reader.ReadAll(ctxFor(t), 0, 0) // from position 0: no catch-up first
	if err != nil || len(got) != len(want) {
		t.Fatalf("ReadAll: %d events, %v; want %d", len(got), err, len(want))
	}
	for i := range got {
		if got[i].Chain != want[i].Chain || got[i].Chain.IsZero() {
			t.Errorf("ReadAll[%d]: chain %s, the writer's %s", i, got[i].Chain, want[i].Chain)
		}
	}
	want = append(want, appendN(t, writer, 4)...)
	var seen []events.Event
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	err = reader.Subscribe(ctx, 0, func(e events.Event) error { // from 0: no catch-up first either
		if seen = append(seen, e); len(seen) == len(want) {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || len(seen) != len(want) {
		t.Fatalf("Subscribe: %d events, %v; want %d", len(seen), err, len(want))
	}
	for i := range seen {
		if seen[i].Chain != want[i].Chain {
			t.Errorf("Subscribe[%d]: chain %s, the writer's %s", i, seen[i].Chain, want[i].Chain)
		}
	}
	if h, err := reader.ChainHead(ctxFor(t)); err != nil || h.Chain != want[len(want)-1].Chain {
		t.Errorf("ChainHead: %s, %v; want the writer's last value %s", h, err, want[len(want)-1].Chain)
	}
}
