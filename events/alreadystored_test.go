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

// TestAlreadyStored is the idempotent-replay rule every store applies through
// events.AlreadyStored: which ids are stored decides first, then every stored
// event's content.
func TestAlreadyStored(t *testing.T) {
	idC := uuid.MustParse("0193a6c1-7b2e-7c00-8000-000000000003")
	in := func(id uuid.UUID) events.Event {
		e := validEvent(id)
		e.Stream = "node-novox"
		return e
	}
	at := func(e events.Event, v, p uint64) events.Event { e.Version, e.Position = v, p; return e }
	with := func(e events.Event, f func(*events.Event)) events.Event { f(&e); return e }
	batch := []events.Event{in(idA), in(idB)}
	none := events.Event{}
	cases := []struct {
		name     string
		evs      []events.Event
		stored   []events.Event
		replayed bool
		conflict string // "": no error; else a part of the message
	}{
		{"nothing looked up", batch, nil, false, ""},
		{"no id stored", batch, []events.Event{none, none}, false, ""},
		{"the same events again", batch, []events.Event{at(in(idA), 1, 7), at(in(idB), 2, 8)}, true, ""},
		{"the same instant in another zone", []events.Event{with(in(idA), func(e *events.Event) { e.At = e.At.UTC() })},
			[]events.Event{at(in(idA), 1, 7)}, true, ""},
		{"stored then new", []events.Event{in(idA), in(idC)}, []events.Event{at(in(idA), 1, 7), none}, false, "events[0].id " + idA.String() + " is stored at position 7 but events[1].id"},
		{"new then stored", []events.Event{in(idC), in(idA)}, []events.Event{none, at(in(idA), 1, 7)}, false, "events[1].id " + idA.String() + " is stored at position 7 but events[0].id"},
		{"a mix whatever the content", []events.Event{in(idC), in(idA)}, []events.Event{none, at(with(in(idA), func(e *events.Event) { e.Type = "x" }), 1, 7)}, false, "is new"},
		{"other stream", batch, []events.Event{at(with(in(idA), func(e *events.Event) { e.Stream = "node-g14" }), 1, 7), at(in(idB), 2, 8)}, false, "events[0].id " + idA.String() + " is stored at position 7 (node-g14@1 #7 node.registered) with another stream"},
		{"other type", batch, []events.Event{at(in(idA), 1, 7), at(with(in(idB), func(e *events.Event) { e.Type = "node.adopted" }), 2, 8)}, false, "events[1].id " + idB.String() + " is stored at position 8 (node-novox@2 #8 node.adopted) with another type"},
		{"other schema", batch[:1], []events.Event{with(at(in(idA), 1, 7), func(e *events.Event) { e.Schema = 2 })}, false, "with another schema"},
		{"other time", batch[:1], []events.Event{with(at(in(idA), 1, 7), func(e *events.Event) { e.At = e.At.Add(time.Nanosecond) })}, false, "with another time"},
		{"other actor", batch[:1], []events.Event{with(at(in(idA), 1, 7), func(e *events.Event) { e.Actor = "controller" })}, false, "with another actor"},
		{"other causation", batch[:1], []events.Event{with(at(in(idA), 1, 7), func(e *events.Event) { e.Causation = "c" })}, false, "with another causation"},
		{"other correlation", batch[:1], []events.Event{with(at(in(idA), 1, 7), func(e *events.Event) { e.Correlation = "c" })}, false, "with another correlation"},
		{"other data bytes", batch[:1], []events.Event{with(at(in(idA), 1, 7), func(e *events.Event) { e.Data = json.RawMessage(`{"node": "novox"}`) })}, false, "with another data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := events.AlreadyStored(tc.evs, tc.stored)
			if got != tc.replayed {
				t.Errorf("replayed = %v, want %v", got, tc.replayed)
			}
			switch {
			case tc.conflict == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tc.conflict != "" && !errors.Is(err, events.ErrIDConflict):
				t.Errorf("err = %v, want ErrIDConflict", err)
			case tc.conflict != "" && !strings.Contains(err.Error(), tc.conflict):
				t.Errorf("err = %q, want it to say %q", err, tc.conflict)
			}
		})
	}
	t.Run("lookups that do not match the batch", func(t *testing.T) {
		got, err := events.AlreadyStored(batch, []events.Event{none})
		if got || err == nil || errors.Is(err, events.ErrIDConflict) {
			t.Errorf("AlreadyStored(2 events, 1 stored) = %v, %v; want an error that is not a conflict", got, err)
		}
	})
}
