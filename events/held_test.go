package events_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/memstore"
)

func TestPublicApplyDataRoundTrips(t *testing.T) {
	held := []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}}
	for _, stored := range []string{
		`{"node":"novox","declaration":"novox/1","sent":2,"applied":1,"unchanged":1,"held_since":"0192"}`,
		`{"held_since":"0192","node":"novox","declaration":"novox/1","sent":2,"applied":1,"unchanged":1,"future":{"a":[1]}}`,
	} {
		pub, err := events.PublicApplyData([]byte(stored), held)
		if err != nil {
			t.Fatal(err)
		}
		want := stored[:len(stored)-1] + `,"held":[{"name":"ca","module":"route-proxy","reason":"found"}]}`
		if string(pub) != want {
			t.Errorf("public form of %s:\n got %s\nwant %s", stored, pub, want)
		}
		back, err := events.StoredApplyData(pub, held)
		if err != nil || string(back) != stored {
			t.Errorf("stored form back: %s, %v; want %s", back, err, stored)
		}
	}
	// A public line written by hand: held elsewhere, keys again in order.
	back, err := events.StoredApplyData([]byte(`{"held":[{"name":"ca","module":"route-proxy","reason":"found"}],"node":"novox","held_since":"0192"}`), held)
	if err != nil || string(back) != `{"held_since":"0192","node":"novox"}` {
		t.Errorf("stored form of a hand-written line: %s, %v", back, err)
	}
}

func TestHeldOfRefusesWhatIsNotAReportOfTheNode(t *testing.T) {
	ctx := context.Background()
	reg := events.NewRegistry()
	st := memstore.New()
	defer st.Close()
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	mk := func(stream string, p events.Payload) events.Event {
		ev, err := reg.New(stream, p, events.Meta{ID: events.NewID(), At: at})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(ctx, stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	held := []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}}
	full := mk("node-novox", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 1, Unchanged: 1, Held: held})
	chained := mk("node-novox", events.ApplyReported{Node: "novox", Declaration: "novox/1", Sent: 2, Applied: 1, Unchanged: 1, HeldSince: full.ID.String()})
	other := mk("node-novox", events.NodeAdopted{Node: "novox"})
	got, err := events.HeldOf(ctx, st, reg, "node-novox", chained.ID.String())
	if err != nil || len(got) != 1 || got[0] != held[0] {
		t.Errorf("HeldOf a report naming another: %v, %v", got, err)
	}
	for name, c := range map[string]struct{ stream, id string }{
		"another node's":  {"node-g14", full.ID.String()},
		"not a report":    {"node-novox", other.ID.String()},
		"never stored":    {"node-novox", events.NewID().String()},
		"not an apply id": {"node-novox", "novox/1"},
	} {
		if _, err := events.HeldOf(ctx, st, reg, c.stream, c.id); !errors.Is(err, events.ErrHeldUnresolved) {
			t.Errorf("%s: %v, want ErrHeldUnresolved", name, err)
		}
	}
}
