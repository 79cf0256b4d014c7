package esdbstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"meshplane/events"
	"meshplane/events/esdbstore"
	"meshplane/events/esdbstore/esdbdouble"
)

// rawClient is a plain client of the server, to write what esdbstore would
// not and to look at what it wrote.
func rawClient(t testing.TB, url string) *esdb.Client {
	t.Helper()
	cfg, err := esdb.ParseConnectionString(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger = esdb.NoopLogging()
	c, err := esdb.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawAll reads every event of $all.
func rawAll(t testing.TB, c *esdb.Client) []*esdb.RecordedEvent {
	t.Helper()
	rs, err := c.ReadAll(ctxFor(t), esdb.ReadAllOptions{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []*esdb.RecordedEvent
	for {
		ev, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.OriginalEvent())
	}
}

func positionsOf(evs []events.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Position)
	}
	return out
}

func span(from, to uint64) []uint64 {
	var out []uint64
	for p := from; p <= to; p++ {
		out = append(out, p)
	}
	return out
}

func sameU64(a, b []uint64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// subscribeUntil collects what Subscribe(after) delivers up to position last.
func subscribeUntil(t testing.TB, s events.Store, after, last uint64) []uint64 {
	t.Helper()
	errEnough := errors.New("enough")
	var got []uint64
	err := s.Subscribe(ctxFor(t), after, func(e events.Event) error {
		got = append(got, e.Position)
		if e.Position >= last {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) {
		t.Fatalf("Subscribe(after %d): got %v, then %v", after, got, err)
	}
	return got
}

// TestPositionMapping: the store's positions are dense whatever KurrentDB's
// commit and prepare positions are: from 0 (the first event of a fresh log,
// which is not esdb.Start{}), at the top of the uint64 range, with events of
// one append sharing a commit position. From is exclusive.
func TestPositionMapping(t *testing.T) {
	const stored = 6 // in appends of 1, 2 and 3 events
	cases := []struct {
		name       string
		cfg        esdbdouble.Config
		lastCommit uint64 // of the seventh event, in $all
	}{
		{"log from 0", esdbdouble.Config{First: 0, Stride: 100}, 600},
		{"log at the top of uint64", esdbdouble.Config{First: math.MaxUint64 - 6*(1<<40), Stride: 1 << 40}, math.MaxUint64},
		{"adjacent prepares, shared commits", esdbdouble.Config{First: 1 << 63, Stride: 1}, 1<<63 + 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDouble(t, tc.cfg)
			s := openStore(t, d.URL())
			defer s.Close()
			var got []events.Event
			for i, n := range []int{1, 2, 3} {
				batch := make([]events.Event, n)
				for j := range batch {
					batch[j] = ev("test.numbered")
				}
				got = append(got, mustAppend(t, s, fmt.Sprintf("node-%d", i%2), batch...)...)
			}
			if ps := positionsOf(got); !sameU64(ps, span(1, stored)) {
				t.Fatalf("appended at positions %v, want %v", ps, span(1, stored))
			}
			for after := uint64(0); after <= stored+2; after++ {
				page, err := s.ReadAll(ctxFor(t), after, 0)
				if err != nil {
					t.Fatalf("ReadAll(after %d): %v", after, err)
				}
				want := span(after+1, stored)
				if ps := positionsOf(page); !sameU64(ps, want) {
					t.Errorf("ReadAll(after %d): positions %v, want %v", after, ps, want)
				}
			}
			// One live event; every subscription, from every position up
			// to the head, delivers exactly the positions after it.
			mustAppend(t, s, "node-live", ev("test.live"))
			raw := rawAll(t, rawClient(t, d.URL()))
			if first, last := raw[0].Position, raw[len(raw)-1].Position; first.Commit != tc.cfg.First || first.Prepare != tc.cfg.First || last.Commit != tc.lastCommit {
				t.Fatalf("the double's $all runs from %d/%d to %d/%d, want from %d/%d to a commit at %d",
					first.Commit, first.Prepare, last.Commit, last.Prepare, tc.cfg.First, tc.cfg.First, tc.lastCommit)
			}
			if raw[1].Position.Commit != raw[2].Position.Commit || raw[1].Position.Prepare == raw[2].Position.Prepare {
				t.Fatalf("events of one append at %v and %v, want one commit, two prepares", raw[1].Position, raw[2].Position)
			}
			for after := uint64(0); after <= stored; after++ {
				if ps := subscribeUntil(t, s, after, stored+1); !sameU64(ps, span(after+1, stored+1)) {
					t.Errorf("Subscribe(after %d): positions %v, want %v", after, ps, span(after+1, stored+1))
				}
			}
			// A store opened afresh numbers the same events the same way.
			again := openStore(t, d.URL())
			defer again.Close()
			if h, err := again.Head(ctxFor(t)); err != nil || h != stored+1 {
				t.Errorf("Head of a store opened afresh: %d, %v; want %d", h, err, stored+1)
			}
			all, err := again.ReadAll(ctxFor(t), 0, 0)
			if err != nil || !sameU64(positionsOf(all), span(1, stored+1)) {
				t.Errorf("ReadAll of a store opened afresh: %v, %v", positionsOf(all), err)
			}
		})
	}
}

// TestSubscribeBeyondHead: a subscription after a position not yet written
// waits for it and delivers only what comes after it.
func TestSubscribeBeyondHead(t *testing.T) {
	s := openStore(t, startDouble(t, esdbdouble.Config{}).URL())
	defer s.Close()
	mustAppend(t, s, "node-a", ev("test.one"), ev("test.two"))
	done := make(chan []uint64, 1)
	go func() { done <- subscribeUntil(t, s, 3, 5) }()
	for range 3 {
		mustAppend(t, s, "node-b", ev("test.later"))
	}
	if ps := <-done; !sameU64(ps, []uint64{4, 5}) {
		t.Errorf("Subscribe(after 3) on a store at 2: positions %v, want [4 5]", ps)
	}
}

// TestOnlyTheStoresEventsCount: events of other applications (other
// prefixes), KurrentDB's own ($ streams, $ types) and another store's on the
// same server take no position.
func TestOnlyTheStoresEventsCount(t *testing.T) {
	d := startDouble(t, esdbdouble.Config{})
	raw := rawClient(t, d.URL())
	mine := openStore(t, d.URL())
	defer mine.Close()
	theirs := openStore(t, d.URL(), esdbstore.WithPrefix("other-"))
	defer theirs.Close()
	foreign := func(stream, typ string) {
		t.Helper()
		_, err := raw.AppendToStream(ctxFor(t), stream, esdb.AppendToStreamOptions{},
			esdb.EventData{EventID: events.NewID(), EventType: typ, ContentType: esdb.ContentTypeJson, Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	var want []events.Event
	for i := range 3 {
		foreign("billing-42", "InvoiceRaised")
		foreign("$$mesh-node-a", "$metadata")
		foreign("$stats-127.0.0.1:2113", "$statsCollected")
		mustAppend(t, theirs, "node-a", ev("test.theirs"))
		want = append(want, mustAppend(t, mine, "node-a", ev(fmt.Sprintf("test.mine-%d", i)))...)
		foreign("mesh-other", "$system-looking") // a $ type in a prefixed stream is the server's
	}
	if ps := positionsOf(want); !sameU64(ps, []uint64{1, 2, 3}) {
		t.Fatalf("appended at %v, want [1 2 3]", ps)
	}
	all, err := mine.ReadAll(ctxFor(t), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range all {
		if e.Position != uint64(i+1) || e.ID != want[i].ID {
			t.Errorf("ReadAll[%d] = %s, want %s", i, e, want[i])
		}
	}
	if len(all) != 3 {
		t.Errorf("ReadAll: %d events, want 3", len(all))
	}
	if ps := subscribeUntil(t, mine, 0, 3); !sameU64(ps, []uint64{1, 2, 3}) {
		t.Errorf("Subscribe: %v, want [1 2 3]", ps)
	}
	if h, err := theirs.Head(ctxFor(t)); err != nil || h != 3 {
		t.Errorf("the other store's Head: %d, %v; want 3", h, err)
	}
}

// TestWhatIsWritten: the KurrentDB event carries our id, our type, our data
// byte for byte, and the envelope in the metadata JSON documented in meta.go.
func TestWhatIsWritten(t *testing.T) {
	d := startDouble(t, esdbdouble.Config{})
	s := openStore(t, d.URL())
	defer s.Close()
	e := ev("apply.reported")
	e.Schema, e.Actor, e.Causation, e.Correlation = 3, "agent:novox", "018f2b6c-0000-7000-8000-000000000001", "push-17"
	e.Data = []byte(`{ "node" : "novox" }`)
	mustAppend(t, s, "node-novox", e)
	raw := rawAll(t, rawClient(t, d.URL()))
	if len(raw) != 1 {
		t.Fatalf("%d events in $all, want 1", len(raw))
	}
	r := raw[0]
	if r.EventID != e.ID || r.EventType != e.Type || r.StreamID != "mesh-node-novox" || r.EventNumber != 0 ||
		string(r.Data) != string(e.Data) || r.ContentType != "application/json" {
		t.Errorf("written: id %s type %q stream %q revision %d data %q content type %q", r.EventID, r.EventType, r.StreamID, r.EventNumber, r.Data, r.ContentType)
	}
	var md map[string]any
	if err := json.Unmarshal(r.UserMetadata, &md); err != nil {
		t.Fatalf("metadata %q: %v", r.UserMetadata, err)
	}
	want := map[string]any{
		"mesh": 1.0, "schema": 3.0, "at": "2026-09-29T22:46:00.123456789Z", "actor": "agent:novox",
		"$causationId": "018f2b6c-0000-7000-8000-000000000001", "$correlationId": "push-17",
	}
	if fmt.Sprint(md) != fmt.Sprint(want) {
		t.Errorf("metadata %s\nwant %v", r.UserMetadata, want)
	}
	if strings.Contains(string(r.UserMetadata), "position") {
		t.Errorf("metadata %s carries a position: positions are derived, never written", r.UserMetadata)
	}
}
