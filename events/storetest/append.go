package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

// testRoundTrip: every field an event is given comes back exactly, from
// Append, ReadStream, ReadAll and Subscribe alike.
func (s *suite) testRoundTrip(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	full := events.Event{
		ID: events.NewID(), Stream: "node-novox", Type: events.TypeApplyReported, Schema: 3,
		At:    time.Date(2026, 9, 29, 22, 46, 1, 987654321, time.FixedZone("EDT", -4*60*60)),
		Actor: "agent:novox", Causation: "018f2b6c-0000-7000-8000-000000000001", Correlation: "push-17",
		Data: json.RawMessage(`{"node":"novox","applied":3,"held":[{"name":"ca","module":"route-proxy"}]}`),
	}
	bare := events.Event{ID: events.NewID(), Type: events.TypeNodeRegistered, Schema: 1} // no At, no data
	plain := newEvent(events.TypeNodeAdopted, `{"node":"novox"}`)

	got := mustAppend(t, st, "node-novox", events.NoStream, full, bare, plain)
	want := prepared(t, "node-novox", 1, 1, full, bare, plain)
	// The store dates bare with its own clock: any instant, in UTC.
	if got[1].At.IsZero() || got[1].At.Location() != time.UTC {
		t.Errorf("event appended without At: got At %s (%s), want the store's clock in UTC", got[1].At, got[1].At.Location())
	}
	want[1].At = got[1].At
	if !bytes.Equal(want[1].Data, []byte("{}")) {
		t.Fatalf("Prepare stores empty data as %q", want[1].Data)
	}
	checkEvents(t, "Append", got, want)
	checkEvents(t, "ReadStream", mustReadStream(t, st, "node-novox"), want)
	checkEvents(t, "ReadAll", mustReadAll(t, st), want)
	checkEvents(t, "Subscribe", collect(t, st, 0, len(want)), want)
}

// testExpectedVersion: Any, NoStream and Exactly(n) against new and written
// streams; a refusal is a *VersionError carrying the actual version.
func (s *suite) testExpectedVersion(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	cases := []struct {
		name     string
		existing int // events in the stream before the append
		expected events.ExpectedVersion
		ok       bool
	}{
		{"any on a new stream", 0, events.Any, true},
		{"any on a written stream", 3, events.Any, true},
		{"no stream on a new stream", 0, events.NoStream, true},
		{"exactly 0 on a new stream", 0, events.Exactly(0), true},
		{"exactly the version", 2, events.Exactly(2), true},
		{"no stream on a written stream", 2, events.NoStream, false},
		{"exactly 0 on a written stream", 1, events.Exactly(0), false},
		{"exactly a version below", 2, events.Exactly(1), false},
		{"exactly a version above", 2, events.Exactly(3), false},
		{"exactly 1 on a new stream", 0, events.Exactly(1), false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream := "expected-" + string(rune('a'+i))
			if tc.existing > 0 {
				mustAppend(t, st, stream, events.NoStream, numbered(tc.existing, stream)...)
			}
			head := mustHead(t, st)
			got, err := st.Append(ctxFor(t), stream, tc.expected, newEvent("test.one", `{}`), newEvent("test.two", `{}`))
			if tc.ok {
				if err != nil {
					t.Fatalf("Append(%s) on a stream at %d: %v", tc.expected, tc.existing, err)
				}
				for j, e := range got {
					if wantV, wantP := uint64(tc.existing+1+j), head+1+uint64(j); e.Version != wantV || e.Position != wantP {
						t.Errorf("event %d stored at v%d #%d, want v%d #%d", j, e.Version, e.Position, wantV, wantP)
					}
				}
				return
			}
			if !errors.Is(err, events.ErrWrongExpectedVersion) {
				t.Fatalf("Append(%s) on a stream at %d: got %v, want ErrWrongExpectedVersion", tc.expected, tc.existing, err)
			}
			var ve *events.VersionError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *events.VersionError", err)
			}
			if ve.Actual != uint64(tc.existing) || ve.Expected != tc.expected || ve.Stream != stream {
				t.Errorf("VersionError{Stream %q, Expected %s, Actual %d}, want {%q, %s, %d}",
					ve.Stream, ve.Expected, ve.Actual, stream, tc.expected, tc.existing)
			}
			checkUnchanged(t, st, head, stream, uint64(tc.existing))
		})
	}
	t.Run("invalid expectation", func(t *testing.T) {
		head := mustHead(t, st)
		_, err := st.Append(ctxFor(t), "expected-bad", events.ExpectedVersion(-2), newEvent("test.one", `{}`))
		if !errors.Is(err, events.ErrInvalid) && !errors.Is(err, events.ErrWrongExpectedVersion) {
			t.Fatalf("Append with expected version -2: got %v, want ErrInvalid or ErrWrongExpectedVersion", err)
		}
		checkUnchanged(t, st, head, "expected-bad", 0)
	})
}

// testVersionsAndPositions: versions are dense per stream from 1, positions
// dense across the store from 1, and Head is the last position.
func (s *suite) testVersionsAndPositions(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	if h := mustHead(t, st); h != 0 {
		t.Fatalf("Head of an empty store: %d, want 0", h)
	}
	steps := []struct {
		stream   string
		n        int
		versions []uint64
	}{
		{"node-a", 1, []uint64{1}},
		{"node-b", 1, []uint64{1}},
		{"node-a", 2, []uint64{2, 3}},
		{"module-c", 3, []uint64{1, 2, 3}},
		{"node-b", 1, []uint64{2}},
	}
	var pos uint64
	for _, step := range steps {
		got := mustAppend(t, st, step.stream, events.Any, numbered(step.n, step.stream)...)
		for i, e := range got {
			pos++
			if e.Version != step.versions[i] || e.Position != pos || e.Stream != step.stream {
				t.Errorf("append to %s: event %d stored as %s@%d #%d, want %s@%d #%d",
					step.stream, i, e.Stream, e.Version, e.Position, step.stream, step.versions[i], pos)
			}
		}
		if h := mustHead(t, st); h != pos {
			t.Errorf("Head after %d events: %d", pos, h)
		}
	}
	for i, e := range mustReadAll(t, st) {
		if e.Position != uint64(i+1) {
			t.Errorf("ReadAll[%d] at position %d", i, e.Position)
		}
	}
	for _, stream := range []string{"node-a", "node-b", "module-c"} {
		for i, e := range mustReadStream(t, st, stream) {
			if e.Version != uint64(i+1) || e.Stream != stream {
				t.Errorf("ReadStream(%s)[%d] is %s@%d", stream, i, e.Stream, e.Version)
			}
		}
	}
}

// testInvalidInput: malformed appends are refused with an *InvalidError and
// write nothing.
func (s *suite) testInvalidInput(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	mustAppend(t, st, "node-a", events.NoStream, newEvent("test.setup", `{}`))
	with := func(f func(*events.Event)) []events.Event {
		e := newEvent("test.bad", `{"ok":true}`)
		f(&e)
		return []events.Event{newEvent("test.good", `{}`), e}
	}
	cases := []struct {
		name   string
		stream string
		evs    []events.Event
	}{
		{"empty stream name", "", with(func(*events.Event) {})},
		{"stream name too long", strings.Repeat("s", events.MaxNameSize+1), with(func(*events.Event) {})},
		{"stream name not UTF-8", "node-\xff", with(func(*events.Event) {})},
		{"no events", "node-a", nil},
		{"nil id", "node-a", with(func(e *events.Event) { e.ID = uuid.Nil })},
		{"empty type", "node-a", with(func(e *events.Event) { e.Type = "" })},
		{"schema 0", "node-a", with(func(e *events.Event) { e.Schema = 0 })},
		{"data over MaxDataSize", "node-a", with(func(e *events.Event) {
			e.Data = json.RawMessage(`{"x":"` + strings.Repeat("a", events.MaxDataSize) + `"}`)
		})},
		{"data not JSON", "node-a", with(func(e *events.Event) { e.Data = json.RawMessage(`{"x":`) })},
		{"data a JSON array", "node-a", with(func(e *events.Event) { e.Data = json.RawMessage(`[1,2]`) })},
		{"event of another stream", "node-a", with(func(e *events.Event) { e.Stream = "node-b" })},
		{"actor not UTF-8", "node-a", with(func(e *events.Event) { e.Actor = "operator:\xc3" })},
		{"correlation too long", "node-a", with(func(e *events.Event) { e.Correlation = strings.Repeat("c", events.MaxNameSize+1) })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			head := mustHead(t, st)
			version := uint64(len(mustReadStream(t, st, "node-a")))
			_, err := st.Append(ctxFor(t), tc.stream, events.Any, tc.evs...)
			if !errors.Is(err, events.ErrInvalid) {
				t.Fatalf("Append: got %v, want ErrInvalid", err)
			}
			var ie *events.InvalidError
			if !errors.As(err, &ie) || ie.Field == "" {
				t.Errorf("error %v is not an *events.InvalidError naming a field", err)
			}
			checkUnchanged(t, st, head, "node-a", version)
		})
	}
	t.Run("ReadStream of an empty stream name", func(t *testing.T) {
		if _, err := st.ReadStream(ctxFor(t), "", 0, 0); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("ReadStream(\"\"): got %v, want ErrInvalid", err)
		}
	})
}

// testAtomicity: a batch that fails appends none of its events, and leaves
// none of its ids behind.
func (s *suite) testAtomicity(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	cases := []struct {
		name     string
		expected events.ExpectedVersion
		batch    func() []events.Event
		want     error
	}{
		{"wrong expected version", events.Exactly(1), func() []events.Event { return numbered(3, "x") }, events.ErrWrongExpectedVersion},
		{"one invalid event", events.Exactly(2), func() []events.Event {
			b := numbered(3, "x")
			b[1].Data = json.RawMessage(`{"broken"`)
			return b
		}, events.ErrInvalid},
		{"one oversized event last", events.Exactly(2), func() []events.Event {
			b := numbered(3, "x")
			b[2].Data = json.RawMessage(`{"x":"` + strings.Repeat("a", events.MaxDataSize) + `"}`)
			return b
		}, events.ErrInvalid},
		{"an id twice in the batch", events.Exactly(2), func() []events.Event {
			b := numbered(3, "x")
			b[2].ID = b[0].ID
			return b
		}, events.ErrInvalid},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stream := "atomic-" + string(rune('a'+i))
			mustAppend(t, st, stream, events.NoStream, numbered(2, "setup")...)
			head := mustHead(t, st)
			batch := tc.batch()
			if _, err := st.Append(ctxFor(t), stream, tc.expected, batch...); !errors.Is(err, tc.want) {
				t.Fatalf("Append: got %v, want %v", err, tc.want)
			}
			checkUnchanged(t, st, head, stream, 2)
			// The batch's first event was not kept: it appends as new.
			retry := batch[0]
			got := mustAppend(t, st, stream, events.Exactly(2), retry)
			if got[0].Version != 3 || got[0].Position != head+1 {
				t.Errorf("first event of the refused batch, appended again: v%d #%d, want v3 #%d", got[0].Version, got[0].Position, head+1)
			}
		})
	}
}

// testIdempotence: re-appending stored ids with the same content is a no-op
// returning the stored events, whatever the expected version; other content
// (any field of it: events.AlreadyStored, which every store decides by, names
// them), another stream, or a mix of stored and new ids, is ErrIDConflict.
func (s *suite) testIdempotence(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	e1 := newEvent("test.first", `{"n":1}`)
	e2 := newEvent("test.second", `{"n":2}`)
	e2.Correlation = "push-1"
	mustAppend(t, st, "node-b", events.NoStream, newEvent("test.other", `{}`))
	stored := mustAppend(t, st, "node-a", events.NoStream, e1, e2)
	mustAppend(t, st, "node-b", events.Any, newEvent("test.other", `{}`))

	changed := func(e events.Event, f func(*events.Event)) events.Event { f(&e); return e }
	replays := []struct {
		name     string
		stream   string
		expected events.ExpectedVersion
		evs      []events.Event
		want     []events.Event
	}{
		{"same batch, now-wrong no stream", "node-a", events.NoStream, []events.Event{e1, e2}, stored},
		{"same batch, any", "node-a", events.Any, []events.Event{e1, e2}, stored},
		{"same batch, exactly a wrong version", "node-a", events.Exactly(7), []events.Event{e1, e2}, stored},
		{"the stored events themselves", "node-a", events.Exactly(1), stored, stored},
		{"the second alone", "node-a", events.NoStream, []events.Event{e2}, stored[1:]},
		{"same instant in another zone", "node-a", events.Any, []events.Event{changed(e1, func(e *events.Event) { e.At = e.At.UTC() })}, stored[:1]},
	}
	for _, tc := range replays {
		t.Run(tc.name, func(t *testing.T) {
			head := mustHead(t, st)
			got, err := st.Append(ctxFor(t), tc.stream, tc.expected, tc.evs...)
			if err != nil {
				t.Fatalf("re-append: %v", err)
			}
			checkEvents(t, "re-append", got, tc.want)
			checkUnchanged(t, st, head, "node-a", 2)
		})
	}

	fresh := newEvent("test.fresh", `{}`)
	conflicts := []struct {
		name   string
		stream string
		evs    []events.Event
	}{
		{"other data", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.Data = json.RawMessage(`{"n":9}`) })}},
		{"same data, other spacing", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.Data = json.RawMessage(`{"n": 1}`) })}},
		{"other type", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.Type = "test.renamed" })}},
		{"other time", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.At = e.At.Add(time.Nanosecond) })}},
		{"other schema", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.Schema++ })}},
		{"other actor", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.Actor = "agent:other" })}},
		{"other causation", "node-a", []events.Event{changed(e1, func(e *events.Event) { e.Causation = "cause-2" })}},
		{"other correlation", "node-a", []events.Event{changed(e2, func(e *events.Event) { e.Correlation = "push-2" })}},
		{"other stream, the whole batch", "node-b", []events.Event{e1, e2}},
		{"other stream", "node-b", []events.Event{e1}},
		{"stored then new", "node-a", []events.Event{e1, fresh}},
		{"new then stored", "node-a", []events.Event{fresh, e2}},
	}
	for _, tc := range conflicts {
		t.Run(tc.name, func(t *testing.T) {
			head := mustHead(t, st)
			nodeB := uint64(len(mustReadStream(t, st, "node-b")))
			_, err := st.Append(ctxFor(t), tc.stream, events.Any, tc.evs...)
			if !errors.Is(err, events.ErrIDConflict) {
				t.Fatalf("Append: got %v, want ErrIDConflict", err)
			}
			checkUnchanged(t, st, head, "node-b", nodeB)
			checkEvents(t, "node-a after the conflict", mustReadStream(t, st, "node-a"), stored)
		})
	}
	t.Run("the refused new id appends later", func(t *testing.T) {
		got := mustAppend(t, st, "node-a", events.Exactly(2), fresh)
		if got[0].Version != 3 {
			t.Errorf("fresh event stored at v%d, want v3", got[0].Version)
		}
	})
}

// testReadStream: after and limit select a window of one stream's versions;
// a stream never written reads as empty.
func (s *suite) testReadStream(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	for i := range 5 { // interleaved, so that versions are not positions
		mustAppend(t, st, "node-a", events.Exactly(uint64(i)), numbered(1, "a")...)
		mustAppend(t, st, "node-b", events.Any, numbered(1, "b")...)
	}
	cases := []struct {
		after uint64
		limit int
		want  []uint64
	}{
		{0, 0, []uint64{1, 2, 3, 4, 5}},
		{0, -1, []uint64{1, 2, 3, 4, 5}},
		{2, 0, []uint64{3, 4, 5}},
		{0, 2, []uint64{1, 2}},
		{2, 2, []uint64{3, 4}},
		{4, 10, []uint64{5}},
		{5, 0, nil},
		{9, 3, nil},
	}
	for _, tc := range cases {
		got, err := st.ReadStream(ctxFor(t), "node-a", tc.after, tc.limit)
		if err != nil {
			t.Fatalf("ReadStream(after %d, limit %d): %v", tc.after, tc.limit, err)
		}
		if vs := versions(got); !equalU64(vs, tc.want) {
			t.Errorf("ReadStream(after %d, limit %d): versions %v, want %v", tc.after, tc.limit, vs, tc.want)
		}
		for _, e := range got {
			if e.Stream != "node-a" || e.Position != 2*e.Version-1 {
				t.Errorf("ReadStream(node-a) returned %s", describe(e))
			}
		}
	}
	got, err := st.ReadStream(ctxFor(t), "node-never", 0, 0)
	if err != nil || len(got) != 0 {
		t.Errorf("ReadStream of a stream never written: %d events, %v; want none, no error", len(got), err)
	}
}

// testReadAll: after and limit select a window of positions.
func (s *suite) testReadAll(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	if got, err := st.ReadAll(ctxFor(t), 0, 0); err != nil || len(got) != 0 {
		t.Fatalf("ReadAll of an empty store: %d events, %v", len(got), err)
	}
	mustAppend(t, st, "node-a", events.NoStream, numbered(3, "a")...)
	mustAppend(t, st, "node-b", events.NoStream, numbered(4, "b")...)
	cases := []struct {
		after uint64
		limit int
		want  []uint64
	}{
		{0, 0, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{0, -5, []uint64{1, 2, 3, 4, 5, 6, 7}},
		{3, 0, []uint64{4, 5, 6, 7}},
		{0, 3, []uint64{1, 2, 3}},
		{2, 3, []uint64{3, 4, 5}},
		{6, 100, []uint64{7}},
		{7, 0, nil},
		{100, 1, nil},
	}
	for _, tc := range cases {
		got, err := st.ReadAll(ctxFor(t), tc.after, tc.limit)
		if err != nil {
			t.Fatalf("ReadAll(after %d, limit %d): %v", tc.after, tc.limit, err)
		}
		if ps := positions(got); !equalU64(ps, tc.want) {
			t.Errorf("ReadAll(after %d, limit %d): positions %v, want %v", tc.after, tc.limit, ps, tc.want)
		}
		if sc, ok := st.(events.Scanner); ok {
			scanned := scanAll(t, sc, tc.after, tc.limit)
			if len(scanned) != len(got) {
				t.Errorf("ScanAll(after %d, limit %d): %d events, ReadAll %d", tc.after, tc.limit, len(scanned), len(got))
				continue
			}
			for i := range got {
				if !scanned[i].SameContent(got[i]) || scanned[i].Position != got[i].Position || scanned[i].Version != got[i].Version {
					t.Errorf("ScanAll(after %d, limit %d) #%d: %+v, ReadAll %+v", tc.after, tc.limit, i, scanned[i], got[i])
				}
			}
		}
	}
	if sc, ok := st.(events.Scanner); ok {
		// fn's error stops the scan and comes back as it was returned.
		stop := errors.New("enough")
		calls := 0
		err := sc.ScanAll(ctxFor(t), 0, 0, func(events.Event) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Errorf("ScanAll with fn failing at once: %v after %d calls, want fn's error after 1", err, calls)
		}
	}
}

// scanAll is what sc.ScanAll hands fn, each event's data copied while it
// is valid.
func scanAll(t *testing.T, sc events.Scanner, after uint64, limit int) []events.Event {
	t.Helper()
	var out []events.Event
	err := sc.ScanAll(ctxFor(t), after, limit, func(ev events.Event) error {
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
		return nil
	})
	if err != nil {
		t.Fatalf("ScanAll(after %d, limit %d): %v", after, limit, err)
	}
	return out
}

// testUnknownTypePreserved: a store never decodes payloads; an event of a
// type this build does not know, at a schema it does not know, with data in
// an unusual layout, is kept byte for byte.
func (s *suite) testUnknownTypePreserved(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	e := newEvent("future.thing-happened", "{ \"b\" : 1,\n\t\"a\":[1, 2.50, {\"z\":null}], \"u\":\"\\u00e9\\ud83d\\ude00 é\", \"big\": 123456789012345678901234567890 }")
	e.Schema = 9
	want := prepared(t, "future-1", 1, 1, e)
	got := mustAppend(t, st, "future-1", events.NoStream, e)
	checkEvents(t, "Append", got, want)
	checkEvents(t, "ReadStream", mustReadStream(t, st, "future-1"), want)
	checkEvents(t, "ReadAll", mustReadAll(t, st), want)
	checkEvents(t, "Subscribe", collect(t, st, 0, 1), want)
}

// testIsolation: a caller changing the bytes it handed over, or the bytes it
// was given, does not change what is stored.
func (s *suite) testIsolation(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	data := []byte(`{"node":"novox"}`)
	e := newEvent("test.isolated", "")
	e.Data = data
	next := newEvent("test.neighbour", `{"node":"g14"}`)
	appended := mustAppend(t, st, "node-novox", events.NoStream, e, next)
	want := prepared(t, "node-novox", 1, 1, newEventLike(e, `{"node":"novox"}`), next)

	copy(data, `{"node":"XXXXX"}`)
	scribble(appended[0].Data)
	checkEvents(t, "after changing the appended bytes", mustReadStream(t, st, "node-novox"), want)

	scribble(mustReadStream(t, st, "node-novox")[0].Data)
	scribble(mustReadAll(t, st)[0].Data)
	checkEvents(t, "after changing read bytes", mustReadAll(t, st), want)
	got := mustReadAll(t, st)
	_ = append(got[0].Data[:1], "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"...)
	checkEvents(t, "after appending to a read event's bytes", got[1:], want[1:])
	checkEvents(t, "after appending to read bytes", mustReadAll(t, st), want)
}

func newEventLike(e events.Event, data string) events.Event {
	e.Data = json.RawMessage(data)
	return e
}

func scribble(b []byte) {
	for i := range b {
		b[i] = 'X'
	}
}

// testCancelledContext: every method honours a done context, and an append
// under one writes nothing.
func (s *suite) testCancelledContext(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	mustAppend(t, st, "node-a", events.NoStream, newEvent("test.setup", `{}`))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range everyMethod(ctx, st) {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want context.Canceled", name, err)
		}
	}
	checkUnchanged(t, st, 1, "node-a", 1)
}

// everyMethod calls each method of st once with ctx (an append of one
// event to node-a), by name.
func everyMethod(ctx context.Context, st events.Store) map[string]func() error {
	calls := map[string]func() error{
		"Append": func() error {
			_, err := st.Append(ctx, "node-a", events.Any, newEvent("test.late", `{}`))
			return err
		},
		"ReadStream": func() error { _, err := st.ReadStream(ctx, "node-a", 0, 0); return err },
		"ReadAll":    func() error { _, err := st.ReadAll(ctx, 0, 0); return err },
		"Head":       func() error { _, err := st.Head(ctx); return err },
		"Subscribe":  func() error { return st.Subscribe(ctx, 0, func(events.Event) error { return nil }) },
	}
	if sc, ok := st.(events.Scanner); ok {
		calls["ScanAll"] = func() error { return sc.ScanAll(ctx, 0, 0, func(events.Event) error { return nil }) }
	}
	return calls
}

// testClosed: after Close every method fails with ErrClosed, and Close again
// is harmless.
func (s *suite) testClosed(t *testing.T) {
	t.Parallel()
	st := s.open(t).st
	mustAppend(t, st, "node-a", events.NoStream, newEvent("test.setup", `{}`))
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := ctxFor(t)
	for name, call := range everyMethod(ctx, st) {
		if err := call(); !errors.Is(err, events.ErrClosed) {
			t.Errorf("%s after Close: got %v, want ErrClosed", name, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func versions(evs []events.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Version)
	}
	return out
}

func positions(evs []events.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Position)
	}
	return out
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
