package events_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/events"
)

var (
	testNow = time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	testAt  = time.Date(2026, 9, 29, 23, 0, 0, 500, time.FixedZone("CEST", 2*60*60))
	idA     = uuid.MustParse("0193a6c1-7b2e-7c00-8000-000000000001")
	idB     = uuid.MustParse("0193a6c1-7b2e-7c00-8000-000000000002")
)

func validEvent(id uuid.UUID) events.Event {
	return events.Event{ID: id, Type: "node.registered", Schema: 1, At: testAt, Data: json.RawMessage(`{"node":"novox"}`)}
}

func TestPrepare(t *testing.T) {
	with := func(f func(*events.Event)) []events.Event {
		e := validEvent(idB)
		f(&e)
		return []events.Event{validEvent(idA), e}
	}
	cases := []struct {
		name      string
		stream    string
		evs       []events.Event
		wantField string // "" when Prepare succeeds
	}{
		{"valid", "node-novox", with(func(*events.Event) {}), ""},
		{"stream given and equal", "node-novox", with(func(e *events.Event) { e.Stream = "node-novox" }), ""},
		{"empty data", "node-novox", with(func(e *events.Event) { e.Data = nil }), ""},
		{"data with leading space", "node-novox", with(func(e *events.Event) { e.Data = json.RawMessage(" \n{}") }), ""},
		{"data at MaxDataSize", "node-novox", with(func(e *events.Event) {
			e.Data = json.RawMessage(`{"x":"` + strings.Repeat("a", events.MaxDataSize-8) + `"}`)
		}), ""},
		{"names at MaxNameSize", "node-novox", with(func(e *events.Event) { e.Actor = strings.Repeat("a", events.MaxNameSize) }), ""},
		{"empty stream", "", with(func(*events.Event) {}), "stream"},
		{"stream too long", strings.Repeat("s", events.MaxNameSize+1), with(func(*events.Event) {}), "stream"},
		{"stream not UTF-8", "node-\xff", with(func(*events.Event) {}), "stream"},
		{"no events", "node-novox", nil, "events"},
		{"nil id", "node-novox", with(func(e *events.Event) { e.ID = uuid.Nil }), "events[1].id"},
		{"other stream", "node-novox", with(func(e *events.Event) { e.Stream = "node-g14" }), "events[1].stream"},
		{"empty type", "node-novox", with(func(e *events.Event) { e.Type = "" }), "events[1].type"},
		{"type too long", "node-novox", with(func(e *events.Event) { e.Type = strings.Repeat("t", events.MaxNameSize+1) }), "events[1].type"},
		{"schema 0", "node-novox", with(func(e *events.Event) { e.Schema = 0 }), "events[1].schema"},
		{"schema negative", "node-novox", with(func(e *events.Event) { e.Schema = -1 }), "events[1].schema"},
		{"actor not UTF-8", "node-novox", with(func(e *events.Event) { e.Actor = "\xc3" }), "events[1].actor"},
		{"causation too long", "node-novox", with(func(e *events.Event) { e.Causation = strings.Repeat("c", events.MaxNameSize+1) }), "events[1].causation"},
		{"correlation not UTF-8", "node-novox", with(func(e *events.Event) { e.Correlation = "\xff" }), "events[1].correlation"},
		{"data over MaxDataSize", "node-novox", with(func(e *events.Event) {
			e.Data = json.RawMessage(`{"x":"` + strings.Repeat("a", events.MaxDataSize) + `"}`)
		}), "events[1].data"},
		{"data not JSON", "node-novox", with(func(e *events.Event) { e.Data = json.RawMessage(`{"x":`) }), "events[1].data"},
		{"data only spaces", "node-novox", with(func(e *events.Event) { e.Data = json.RawMessage("  ") }), "events[1].data"},
		{"data an array", "node-novox", with(func(e *events.Event) { e.Data = json.RawMessage(`[]`) }), "events[1].data"},
		{"data a string", "node-novox", with(func(e *events.Event) { e.Data = json.RawMessage(`"x"`) }), "events[1].data"},
		{"data null", "node-novox", with(func(e *events.Event) { e.Data = json.RawMessage(`null`) }), "events[1].data"},
		{"id twice", "node-novox", with(func(e *events.Event) { e.ID = idA }), "events[1].id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]events.Event(nil), tc.evs...)
			got, err := events.Prepare(tc.stream, tc.evs, testNow)
			for i := range in {
				if !in[i].SameContent(tc.evs[i]) || in[i].At.Location() != tc.evs[i].At.Location() {
					t.Errorf("Prepare changed its input event %d", i)
				}
			}
			if tc.wantField != "" {
				var ie *events.InvalidError
				if !errors.As(err, &ie) || !errors.Is(err, events.ErrInvalid) {
					t.Fatalf("Prepare: got %v, want an *InvalidError", err)
				}
				if ie.Field != tc.wantField || ie.Reason == "" {
					t.Errorf("InvalidError{Field %q, Reason %q}, want field %q and a reason", ie.Field, ie.Reason, tc.wantField)
				}
				if got != nil {
					t.Errorf("Prepare returned %d events beside its error", len(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if len(got) != len(tc.evs) {
				t.Fatalf("Prepare returned %d events for %d", len(got), len(tc.evs))
			}
			for i, e := range got {
				if e.Stream != tc.stream || e.At.Location() != time.UTC || !e.At.Equal(tc.evs[i].At) ||
					e.Version != 0 || e.Position != 0 || len(e.Data) == 0 {
					t.Errorf("prepared event %d: %#v", i, e)
				}
			}
		})
	}
}

func TestPrepareDefaults(t *testing.T) {
	in := events.Event{ID: idA, Type: "node.registered", Schema: 1, Version: 7, Position: 9}
	got, err := events.Prepare("node-novox", []events.Event{in}, testNow.In(time.FixedZone("X", 3600)))
	if err != nil {
		t.Fatal(err)
	}
	e := got[0]
	if !e.At.Equal(testNow) || e.At.Location() != time.UTC {
		t.Errorf("zero At became %s (%s), want now in UTC", e.At, e.At.Location())
	}
	if string(e.Data) != "{}" {
		t.Errorf("empty data became %q, want {}", e.Data)
	}
	if e.Version != 0 || e.Position != 0 {
		t.Errorf("store-assigned fields kept: v%d #%d", e.Version, e.Position)
	}
	if e.Stream != "node-novox" {
		t.Errorf("stream %q", e.Stream)
	}
}

func TestSameContent(t *testing.T) {
	base := validEvent(idA)
	base.Stream = "node-novox"
	cases := []struct {
		name   string
		change func(*events.Event)
		same   bool
	}{
		{"identical", func(*events.Event) {}, true},
		{"other version and position", func(e *events.Event) { e.Version, e.Position = 4, 9 }, true},
		{"same instant, other zone", func(e *events.Event) { e.At = e.At.UTC() }, true},
		{"other id", func(e *events.Event) { e.ID = idB }, false},
		{"other stream", func(e *events.Event) { e.Stream = "node-g14" }, false},
		{"other type", func(e *events.Event) { e.Type = "node.adopted" }, false},
		{"other schema", func(e *events.Event) { e.Schema = 2 }, false},
		{"other instant", func(e *events.Event) { e.At = e.At.Add(time.Nanosecond) }, false},
		{"other actor", func(e *events.Event) { e.Actor = "controller" }, false},
		{"other causation", func(e *events.Event) { e.Causation = "x" }, false},
		{"other correlation", func(e *events.Event) { e.Correlation = "x" }, false},
		{"other data bytes", func(e *events.Event) { e.Data = json.RawMessage(`{"node": "novox"}`) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := base
			tc.change(&o)
			if got := base.SameContent(o); got != tc.same {
				t.Errorf("SameContent = %v, want %v", got, tc.same)
			}
			if got := o.SameContent(base); got != tc.same {
				t.Errorf("SameContent is not symmetric")
			}
		})
	}
}

func TestExpectedVersion(t *testing.T) {
	cases := []struct {
		e      events.ExpectedVersion
		actual uint64
		check  bool
		valid  bool
		str    string
	}{
		{events.Any, 0, true, true, "any version"},
		{events.Any, 42, true, true, "any version"},
		{events.NoStream, 0, true, true, "no stream"},
		{events.NoStream, 1, false, true, "no stream"},
		{events.Exactly(0), 0, true, true, "no stream"},
		{events.Exactly(3), 3, true, true, "version 3"},
		{events.Exactly(3), 2, false, true, "version 3"},
		{events.Exactly(3), 4, false, true, "version 3"},
		{events.ExpectedVersion(-2), 0, false, false, "invalid expectation -2"},
	}
	for _, tc := range cases {
		t.Run(tc.str, func(t *testing.T) {
			if got := tc.e.Check(tc.actual); got != tc.check {
				t.Errorf("%s.Check(%d) = %v, want %v", tc.e, tc.actual, got, tc.check)
			}
			if got := tc.e.Valid(); got != tc.valid {
				t.Errorf("%s.Valid() = %v, want %v", tc.e, got, tc.valid)
			}
			if got := tc.e.String(); got != tc.str {
				t.Errorf("String() = %q, want %q", got, tc.str)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	ve := error(&events.VersionError{Stream: "node-novox", Expected: events.Exactly(2), Actual: 5})
	wrapped := errors.Join(errors.New("context"), ve)
	if !errors.Is(wrapped, events.ErrWrongExpectedVersion) || errors.Is(ve, events.ErrInvalid) {
		t.Errorf("VersionError matches the wrong sentinels")
	}
	if got, want := ve.Error(), "stream node-novox: expected version 2, stream is at version 5: wrong expected version"; got != want {
		t.Errorf("VersionError: %q, want %q", got, want)
	}
	ie := error(&events.InvalidError{Field: "events[2].data", Reason: "not valid JSON"})
	if !errors.Is(ie, events.ErrInvalid) || errors.Is(ie, events.ErrWrongExpectedVersion) {
		t.Errorf("InvalidError matches the wrong sentinels")
	}
	if got, want := ie.Error(), "events[2].data: not valid JSON: invalid input"; got != want {
		t.Errorf("InvalidError: %q, want %q", got, want)
	}
}
