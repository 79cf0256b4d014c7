package esdbstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"meshplane/events"
	"meshplane/events/esdbstore"
	"meshplane/events/esdbstore/esdbdouble"
)

// appendN appends n events in appends of 1 to 5 events over three streams,
// and returns them as stored.
func appendN(t testing.TB, s events.Store, n int) []events.Event {
	t.Helper()
	var out []events.Event
	for i := 0; len(out) < n; i++ {
		batch := make([]events.Event, min(1+i%5, n-len(out)))
		for j := range batch {
			batch[j] = ev("test.tabled")
		}
		out = append(out, mustAppend(t, s, fmt.Sprintf("node-%d", i%3), batch...)...)
	}
	return out
}

// checkStore checks that s holds exactly want, at their positions, through
// every read: ReadAll from every position, ReadStream, Subscribe, Head.
func checkStore(t *testing.T, s events.Store, want []events.Event) {
	t.Helper()
	n := uint64(len(want))
	if h, err := s.Head(ctxFor(t)); err != nil || h != n {
		t.Fatalf("Head: %d, %v; want %d", h, err, n)
	}
	step := max(1, n/40) // every position of a small store, 40 of a larger one
	for after := uint64(0); after <= n; after = min(after+step, max(after+1, n)) {
		got, err := s.ReadAll(ctxFor(t), after, 0)
		if err != nil {
			t.Fatalf("ReadAll(after %d): %v", after, err)
		}
		if len(got) != int(n-after) {
			t.Fatalf("ReadAll(after %d): %d events, want %d", after, len(got), n-after)
		}
		for i, e := range got {
			if w := want[after+uint64(i)]; e.Position != w.Position || e.ID != w.ID || e.Version != w.Version {
				t.Fatalf("ReadAll(after %d)[%d] = %s, want %s", after, i, e, w)
			}
		}
	}
	for _, stream := range []string{"node-0", "node-1", "node-2"} {
		got, err := s.ReadStream(ctxFor(t), stream, 0, 0)
		if err != nil {
			t.Fatalf("ReadStream(%s): %v", stream, err)
		}
		var ws []events.Event
		for _, e := range want {
			if e.Stream == stream {
				ws = append(ws, e)
			}
		}
		if len(got) != len(ws) {
			t.Fatalf("ReadStream(%s): %d events, want %d", stream, len(got), len(ws))
		}
		for i := range got {
			if got[i].Position != ws[i].Position || got[i].ID != ws[i].ID {
				t.Errorf("ReadStream(%s)[%d] = %s, want %s", stream, i, got[i], ws[i])
			}
		}
	}
	if n > 3 {
		if ps := subscribeUntil(t, s, n-3, n); !sameU64(ps, span(n-2, n)) {
			t.Errorf("Subscribe(after %d): %v, want %v", n-3, ps, span(n-2, n))
		}
	}
}

// tailOf is how many events of $all an open of a store holding want, with
// full chunks of chunk positions in its table, reads: from the last chunk's
// last event (which it checks is still there) to the end of $all, foreign
// and chunk events included.
func tailOf(t testing.TB, url string, want []events.Event, chunk int) uint64 {
	t.Helper()
	last := want[len(want)/chunk*chunk-1]
	raw := rawAll(t, rawClient(t, url))
	for i, r := range raw {
		if r.EventID == last.ID {
			return uint64(len(raw) - i)
		}
	}
	t.Fatalf("position %d (id %s) is not in $all", last.Position, last.ID)
	return 0
}

// TestOpenReadsOnlyTheNewEvents: a store's position table is kept in its
// table stream, in chunks; an open reads the last chunk and $all from where
// it ends, not the whole log; and the store opened so numbers, reads,
// subscribes and decides replays as the one that wrote the events.
func TestOpenReadsOnlyTheNewEvents(t *testing.T) {
	const chunk, n = 8, 60 // 7 chunks, 4 positions after them
	d := startDouble(t, esdbdouble.Config{})
	first := openStore(t, d.URL(), esdbstore.WithChunk(chunk))
	want := appendN(t, first, n)
	first.Close()

	var chunks []*esdb.RecordedEvent
	for _, r := range rawAll(t, rawClient(t, d.URL())) {
		if r.StreamID == "mesh-"+esdbstore.TableStream {
			chunks = append(chunks, r)
		}
	}
	if len(chunks) != n/chunk {
		t.Fatalf("%d chunks in the table stream, want %d", len(chunks), n/chunk)
	}
	for i, c := range chunks {
		if c.EventNumber != uint64(i) || !strings.HasPrefix(c.EventType, "$") || c.ContentType != "application/octet-stream" {
			t.Errorf("chunk %d: revision %d, type %q, content type %q; want revision %d, a $ type, binary", i, c.EventNumber, c.EventType, c.ContentType, i)
		}
	}

	before := d.Traffic()
	s := openStore(t, d.URL(), esdbstore.WithChunk(chunk))
	defer s.Close()
	opened := d.Traffic()
	// $all from the last chunk's last event: that event, the 4 after it,
	// and the chunk events written since.
	if read, tail := opened.All-before.All, tailOf(t, d.URL(), want, chunk); read != tail || read > 2*chunk {
		t.Errorf("Open read %d events of $all, want %d: the tail after the last chunk (the log holds %d)", read, tail, n+len(chunks))
	}
	if read := opened.Stream - before.Stream; read != 1 {
		t.Errorf("Open read %d events of streams, want 1: the last chunk", read)
	}
	checkStore(t, s, want)

	// Replays and conflicts are decided by ids that only the chunks hold.
	got, err := s.Append(ctxFor(t), want[3].Stream, events.NoStream, want[3])
	if err != nil || len(got) != 1 || got[0].Position != 4 {
		t.Errorf("re-append of position 4: %v, %v; want it returned as stored", got, err)
	}
	other := want[3]
	other.Data = []byte(`{"other":true}`)
	if _, err := s.Append(ctxFor(t), want[3].Stream, events.Any, other); !errors.Is(err, events.ErrIDConflict) {
		t.Errorf("position 4's id with other data: %v, want ErrIDConflict", err)
	}
	elsewhere := want[3]
	elsewhere.Stream = "node-elsewhere"
	if _, err := s.Append(ctxFor(t), "node-elsewhere", events.Any, elsewhere); !errors.Is(err, events.ErrIDConflict) {
		t.Errorf("position 4's id in another stream: %v, want ErrIDConflict", err)
	}
	if next := mustAppend(t, s, "node-0", ev("test.next")); next[0].Position != n+1 {
		t.Errorf("next append at position %d, want %d", next[0].Position, n+1)
	}
}

// TestTableOfAStoreWithoutOne: a store written without a table (by an older
// build, in effect) is read from the start of $all once; that open writes the
// table, and the next reads only the new events.
func TestTableOfAStoreWithoutOne(t *testing.T) {
	const chunk, n = 8, 30
	d := startDouble(t, esdbdouble.Config{})
	old := openStore(t, d.URL(), esdbstore.WithChunk(1<<20))
	want := appendN(t, old, n)
	old.Close()

	before := d.Traffic()
	s := openStore(t, d.URL(), esdbstore.WithChunk(chunk))
	if read := d.Traffic().All - before.All; read < n {
		t.Errorf("the first open read %d events of $all, want the whole log (%d)", read, n)
	}
	checkStore(t, s, want)
	s.Close()

	before = d.Traffic()
	again := openStore(t, d.URL(), esdbstore.WithChunk(chunk))
	defer again.Close()
	if read, tail := d.Traffic().All-before.All, tailOf(t, d.URL(), want, chunk); read != tail || read > 2*chunk {
		t.Errorf("the second open read %d events of $all, want %d: the tail after the last chunk", read, tail)
	}
	checkStore(t, again, want)
}

// TestTableWritersRace: stores of one prefix, with chunks of different
// sizes, append at once; each writes chunks, and takes another's chunk when
// it was first. A store opened afterwards numbers every event as they did.
func TestTableWritersRace(t *testing.T) {
	d := startDouble(t, esdbdouble.Config{})
	stores := []*esdbstore.Store{
		openStore(t, d.URL(), esdbstore.WithChunk(8)),
		openStore(t, d.URL(), esdbstore.WithChunk(5)),
		openStore(t, d.URL(), esdbstore.WithChunk(8)),
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			s := stores[w%len(stores)]
			for i := range 12 {
				if _, err := s.Append(ctxFor(t), fmt.Sprintf("node-%d", (w+i)%3), events.Any, ev("test.raced"), ev("test.raced")); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	var want []events.Event
	for i, s := range stores {
		all, err := s.ReadAll(ctxFor(t), 0, 0)
		if err != nil {
			t.Fatalf("store %d: ReadAll: %v", i, err)
		}
		if i == 0 {
			want = all
			continue
		}
		if !slices.EqualFunc(all, want, func(a, b events.Event) bool { return a.ID == b.ID && a.Position == b.Position }) {
			t.Errorf("store %d numbers the log otherwise than store 0", i)
		}
	}
	if len(want) != 6*12*2 {
		t.Fatalf("%d events stored, want %d", len(want), 6*12*2)
	}
	for _, s := range stores {
		s.Close()
	}
	for _, size := range []int{8, 5, 3} {
		s := openStore(t, d.URL(), esdbstore.WithChunk(size))
		checkStore(t, s, want)
		s.Close()
	}
}

// TestDamagedTable: a table stream that is not esdbstore's table, or that
// names events $all does not hold as the store's, fails Open with
// events.ErrDamaged, naming the table; the store's own stream name for it is
// refused.
func TestDamagedTable(t *testing.T) {
	for _, table := range []string{esdbstore.TableStream, esdbstore.LegacyTableStream} {
		t.Run("not a chunk in "+table, func(t *testing.T) {
			d := startDouble(t, esdbdouble.Config{})
			_, err := rawClient(t, d.URL()).AppendToStream(ctxFor(t), "mesh-"+table, esdb.AppendToStreamOptions{},
				esdb.EventData{EventID: events.NewID(), EventType: "$mesh-positions", ContentType: esdb.ContentTypeBinary, Data: []byte("mpt1 and nonsense")})
			if err != nil {
				t.Fatal(err)
			}
			_, err = esdbstore.Open(ctxFor(t), d.URL())
			if want := "mesh-" + table + "@0"; !errors.Is(err, events.ErrDamaged) || !strings.Contains(err.Error(), want) {
				t.Errorf("Open over a table of nonsense: %v, want ErrDamaged naming %s", err, want)
			}
		})
	}
	t.Run("another prefix's table", func(t *testing.T) {
		d := startDouble(t, esdbdouble.Config{})
		a := openStore(t, d.URL(), esdbstore.WithPrefix("a-"), esdbstore.WithChunk(2))
		appendN(t, a, 5)
		a.Close()
		raw := rawClient(t, d.URL())
		for _, r := range rawAll(t, raw) {
			if r.StreamID == "a-"+esdbstore.TableStream {
				if _, err := raw.AppendToStream(ctxFor(t), "b-"+esdbstore.TableStream, esdb.AppendToStreamOptions{},
					esdb.EventData{EventID: events.NewID(), EventType: r.EventType, ContentType: esdb.ContentTypeBinary, Data: r.Data}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := esdbstore.Open(ctxFor(t), d.URL(), esdbstore.WithPrefix("b-")); !errors.Is(err, events.ErrDamaged) {
			t.Errorf("Open over a table copied from another prefix: %v, want ErrDamaged", err)
		}
	})
	t.Run("the table's stream name", func(t *testing.T) {
		s := openStore(t, startDouble(t, esdbdouble.Config{}).URL())
		defer s.Close()
		var ie *events.InvalidError
		if _, err := s.Append(ctxFor(t), esdbstore.TableStream, events.Any, ev("test.mine")); !errors.As(err, &ie) || ie.Field != "stream" {
			t.Errorf("Append to %s: %v, want an InvalidError on the stream", esdbstore.TableStream, err)
		}
		if _, err := s.ReadStream(ctxFor(t), esdbstore.TableStream, 0, 0); !errors.As(err, &ie) || ie.Field != "stream" {
			t.Errorf("ReadStream of %s: %v, want an InvalidError on the stream", esdbstore.TableStream, err)
		}
	})
}

// BenchmarkOpenAgainstDouble opens a store of 50,000 events (appended in
// batches of 100 over 10 streams) on the gRPC double, and reports the events
// of $all each open read.
func BenchmarkOpenAgainstDouble(b *testing.B) {
	const n, batch = 50_000, 100
	d := startDouble(b, esdbdouble.Config{})
	s := openStore(b, d.URL())
	for i := range n / batch {
		evs := make([]events.Event, batch)
		for j := range evs {
			evs[j] = ev("test.bench")
		}
		mustAppend(b, s, fmt.Sprintf("node-%d", i%10), evs...)
	}
	s.Close()
	before := d.Traffic()
	b.ResetTimer()
	for b.Loop() {
		s := openStore(b, d.URL())
		if h, err := s.Head(ctxFor(b)); err != nil || h != n {
			b.Fatalf("Head: %d, %v; want %d", h, err, n)
		}
		s.Close()
	}
	b.ReportMetric(float64(d.Traffic().All-before.All)/float64(b.N), "all-events/open")
}

// BenchmarkFullOpenAgainstDouble opens a store of 20,000 events with no
// table (WithChunk(1<<20): no open writes one), so that every open reads
// and numbers the whole log, as the first open after an upgrade from an
// older build's table does: chained (each event decoded and chained) and
// WithoutChain, in one run, on the gRPC double (not KurrentDB).
func BenchmarkFullOpenAgainstDouble(b *testing.B) {
	const n, batch = 20_000, 100
	d := startDouble(b, esdbdouble.Config{})
	s := openStore(b, d.URL(), esdbstore.WithChunk(1<<20))
	for i := range n / batch {
		evs := make([]events.Event, batch)
		for j := range evs {
			evs[j] = ev("test.bench")
		}
		mustAppend(b, s, fmt.Sprintf("node-%d", i%10), evs...)
	}
	s.Close()
	for _, v := range []struct {
		name string
		opts []esdbstore.Option
	}{{"chained", nil}, {"unchained", []esdbstore.Option{esdbstore.WithoutChain()}}} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				s := openStore(b, d.URL(), append([]esdbstore.Option{esdbstore.WithChunk(1 << 20)}, v.opts...)...)
				if h, err := s.Head(ctxFor(b)); err != nil || h != n {
					b.Fatalf("Head: %d, %v; want %d", h, err, n)
				}
				s.Close()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
