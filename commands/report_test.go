package commands_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"meshplane/commands"
	"meshplane/events"
	"meshplane/events/memstore"
)

var doorNow = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func goodDelivery() commands.Delivery {
	return commands.Delivery{
		Report:  events.ApplyReported{Node: "n1", Declaration: "n1/3", Sent: 3, Applied: 3, Created: []string{"web"}, Unchanged: 2},
		ApplyID: uuid.Must(uuid.NewV7()), AppliedAt: doorNow.Add(-time.Minute), Correlation: "c1",
		ReceivedAt: doorNow,
	}
}

// TestCheckReport: each check of the door, alone, refuses with its reason;
// what passes them all is nil.
func TestCheckReport(t *testing.T) {
	pushed := commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-time.Hour), Pushed: true}
	for _, tc := range []struct {
		name   string
		edit   func(*commands.Delivery)
		decl   *commands.DeclarationFacts
		reason string // "" for accepted
	}{
		{"good", func(*commands.Delivery) {}, &pushed, ""},
		{"good, facts unknown", func(*commands.Delivery) {}, nil, ""},
		{"late from the outbox, days after its push", func(d *commands.Delivery) { d.AppliedAt = doorNow.Add(-72 * time.Hour) },
			&commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-73 * time.Hour), Pushed: true}, ""},
		{"a clock a little ahead", func(d *commands.Delivery) { d.AppliedAt = doorNow.Add(4 * time.Minute) }, &pushed, ""},
		{"the latest declaration, its push not yet recorded", func(*commands.Delivery) {},
			&commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-time.Second), Latest: true}, ""},
		{"a push that failed may have reached the bus", func(*commands.Delivery) {},
			&commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-time.Hour), Pushed: true}, ""},

		{"no apply id", func(d *commands.Delivery) { d.ApplyID = uuid.Nil }, &pushed, events.RefusedMalformed},
		{"no apply time", func(d *commands.Delivery) { d.AppliedAt = time.Time{} }, &pushed, events.RefusedMalformed},
		{"attempts below zero", func(d *commands.Delivery) { d.Attempts = -1 }, &pushed, events.RefusedMalformed},
		{"a correlation too long", func(d *commands.Delivery) { d.Correlation = strings.Repeat("c", events.MaxNameSize+1) }, &pushed, events.RefusedMalformed},
		{"unchanged below zero", func(d *commands.Delivery) {
			d.Report = events.ApplyReported{Node: "n1", Declaration: "n1/3", Unchanged: -1, Created: []string{}}
		}, &pushed, events.RefusedCounts},
		{"sent below zero", func(d *commands.Delivery) { d.Report.Sent = -1 }, &pushed, events.RefusedCounts},
		{"applied disagrees with the lists", func(d *commands.Delivery) { d.Report.Applied = 9 }, &pushed, events.RefusedCounts},
		{"more applied and held than sent", func(d *commands.Delivery) {
			d.Report.Held = []events.Held{{Name: "x", Module: "m", Reason: "not taken"}}
		}, &pushed, events.RefusedCounts},
		{"dated 9999", func(d *commands.Delivery) { d.AppliedAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, &pushed, events.RefusedTime},
		{"dated 9999, facts unknown", func(d *commands.Delivery) { d.AppliedAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, nil, events.RefusedTime},
		{"dated 9999, no clock to compare with (a simulation's)", func(d *commands.Delivery) { d.AppliedAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) }, nil, ""},
		{"six minutes ahead", func(d *commands.Delivery) { d.AppliedAt = doorNow.Add(6 * time.Minute) }, &pushed, events.RefusedTime},
		{"dated 1900", func(d *commands.Delivery) { d.AppliedAt = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) }, &pushed, events.RefusedTime},
		{"before its declaration was composed", func(d *commands.Delivery) { d.AppliedAt = doorNow.Add(-66 * time.Minute) }, &pushed, events.RefusedTime},
		{"another node's declaration", func(d *commands.Delivery) { d.Report.Declaration = "n2/999" },
			&commands.DeclarationFacts{}, events.RefusedDecl},
		{"composed, never pushed, not the latest", func(*commands.Delivery) {},
			&commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-time.Hour)}, events.RefusedDecl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := goodDelivery()
			tc.edit(&d)
			now := doorNow
			if strings.Contains(tc.name, "no clock") {
				now = time.Time{}
			}
			err := commands.CheckReport(d, tc.decl, now)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ref *commands.Refusal
			if !errors.As(err, &ref) || ref.Reason != tc.reason {
				t.Fatalf("got %v, want a refusal for %s", err, tc.reason)
			}
			if !errors.Is(err, commands.ErrRefused) || !errors.Is(err, commands.ErrRejected) {
				t.Fatalf("%v is not ErrRefused and ErrRejected", err)
			}
		})
	}
}

// facts answers the door from a fixed table.
type facts map[string]commands.DeclarationFacts

func (f facts) Declaration(_ context.Context, node, decl string) (commands.DeclarationFacts, error) {
	if decl == "broken" {
		return commands.DeclarationFacts{}, errors.New("projections not caught up")
	}
	return f[node+" "+decl], nil
}

func doorSetup(t *testing.T) (*commands.Handler, events.Store) {
	t.Helper()
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	h := commands.NewHandler(store, events.NewRegistry(), commands.WithClock(func() time.Time { return doorNow }),
		commands.WithReportFacts(facts{
			"n1 n1/3": {Composed: true, ComposedAt: doorNow.Add(-time.Hour), Pushed: true},
		}))
	must(t, h, commands.RegisterNode{Node: "n1"}, commands.RegisterNode{Node: "n2"})
	return h, store
}

func refusedFor(t *testing.T, err error, reason string) {
	t.Helper()
	var ref *commands.Refusal
	if !errors.As(err, &ref) || ref.Reason != reason {
		t.Fatalf("got %v, want a refusal for %s", err, reason)
	}
}

func streamTypes(t *testing.T, store events.Store, stream string) []string {
	t.Helper()
	evs, err := store.ReadStream(context.Background(), stream, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return out
}

// TestRecordApplyDoor: through RecordApply, a refused report appends
// nothing, a good one is recorded with the controller's receive time, and
// its re-delivery (received again later) appends nothing; an apply id used
// with other content, or another stream's event id, is refused.
func TestRecordApplyDoor(t *testing.T) {
	ctx := context.Background()
	h, store := doorSetup(t)
	before := streamTypes(t, store, "node-n1")

	t.Run("refused before anything is appended", func(t *testing.T) {
		for _, edit := range []func(*commands.Delivery){
			func(d *commands.Delivery) { d.Report.Unchanged = -1 },
			func(d *commands.Delivery) { d.Report.Declaration = "n2/999" },
			func(d *commands.Delivery) { d.AppliedAt = time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC) },
			func(d *commands.Delivery) { d.AppliedAt = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC) },
			func(d *commands.Delivery) {
				d.Report.Created = []string{strings.Repeat("x", events.MaxDataSize)}
				d.Report.Applied = 3
			},
		} {
			d := goodDelivery()
			edit(&d)
			if _, err := h.RecordApply(ctx, d); !errors.Is(err, commands.ErrRefused) {
				t.Fatalf("recorded: %v", err)
			}
		}
		if got := streamTypes(t, store, "node-n1"); len(got) != len(before) {
			t.Fatalf("stream n1 is %v, was %v", got, before)
		}
	})

	t.Run("too large for the store", func(t *testing.T) {
		d := goodDelivery()
		d.Report.Created = []string{strings.Repeat("<", events.MaxDataSize/4)} // JSON writes each as 6 bytes
		d.Report.Unchanged = 2
		_, err := h.RecordApply(ctx, d)
		refusedFor(t, err, events.RefusedTooLarge)
	})

	t.Run("a facts failure is not a refusal", func(t *testing.T) {
		d := goodDelivery()
		d.Report.Declaration = "broken"
		_, err := h.RecordApply(ctx, d)
		if err == nil || errors.Is(err, commands.ErrRejected) {
			t.Fatalf("got %v, want an error to retry on", err)
		}
	})

	good := goodDelivery()
	good.ReceivedAt = doorNow
	first, err := h.RecordApply(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	a, err := events.DecodeAs[events.ApplyReported](events.NewRegistry(), first[0])
	if err != nil || !a.ReceivedAt.Equal(doorNow) || !first[0].At.Equal(good.AppliedAt) {
		t.Fatalf("recorded %+v at %s (%v): want received_at %s beside the agent's time", a, first[0].At, err, doorNow)
	}

	t.Run("the agent's own received_at is not kept", func(t *testing.T) {
		d := goodDelivery()
		d.Report.ReceivedAt = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		stored, err := h.RecordApply(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := events.DecodeAs[events.ApplyReported](events.NewRegistry(), stored[0])
		if !a.ReceivedAt.Equal(doorNow) {
			t.Fatalf("received_at %s, want the controller's %s", a.ReceivedAt, doorNow)
		}
		d = goodDelivery()
		d.ReceivedAt, d.Report.ReceivedAt = time.Time{}, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		if stored, err = h.RecordApply(ctx, d); err != nil {
			t.Fatal(err)
		}
		if a, _ = events.DecodeAs[events.ApplyReported](events.NewRegistry(), stored[0]); !a.ReceivedAt.IsZero() {
			t.Fatalf("received_at %s, the agent's", a.ReceivedAt)
		}
	})

	t.Run("the same report, received again later, late", func(t *testing.T) {
		again := good
		again.ReceivedAt = doorNow.Add(time.Hour)
		again.Attempts, again.LastError = 1, "nats: timeout"
		stored, err := h.RecordApply(ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != 1 || stored[0].Position != first[0].Position {
			t.Fatalf("re-delivery stored %v, want the first %v", stored, first)
		}
	})

	t.Run("the apply id again, with other content", func(t *testing.T) {
		other := good
		other.Report.Created, other.Report.Unchanged = nil, 3
		_, err := h.RecordApply(ctx, other)
		refusedFor(t, err, events.RefusedApplyID)
	})

	t.Run("another stream's event id", func(t *testing.T) {
		evs, err := store.ReadStream(ctx, "node-n2", 0, 1)
		if err != nil || len(evs) != 1 {
			t.Fatal(evs, err)
		}
		d := goodDelivery()
		d.ApplyID = evs[0].ID
		_, err = h.RecordApply(ctx, d)
		refusedFor(t, err, events.RefusedApplyID)
	})

	t.Run("an unknown node is a rejection, no refusal", func(t *testing.T) {
		d := goodDelivery()
		d.Report.Node = "ghost"
		_, err := h.RecordApply(ctx, d)
		var rej *commands.Rejection
		if !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
			t.Fatalf("got %v, want node-unknown", err)
		}
	})
}

// TestRecordRefusal: a refusal is one report.refused on the node's stream,
// never the bytes; the same message again appends nothing; a node that is
// not registered has nothing appended.
func TestRecordRefusal(t *testing.T) {
	ctx := context.Background()
	h, store := doorSetup(t)
	r := commands.RefusedReport{
		Node: "n1", Reason: events.RefusedCounts, Detail: "unchanged: -1 is below zero " + strings.Repeat("!", 1000),
		Size: 52, Digest: "sha256:ab12", ApplyID: uuid.Must(uuid.NewV7()), Declaration: "n1/3", Correlation: "c1",
	}
	stored, err := h.RecordRefusal(ctx, r)
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored %v, %v", stored, err)
	}
	ev := stored[0]
	p, err := events.DecodeAs[events.ReportRefused](events.NewRegistry(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID != commands.RefusalID("n1", "sha256:ab12") || ev.Actor != "controller" || ev.Causation != r.ApplyID.String() ||
		p.Reason != events.RefusedCounts || p.Digest != "sha256:ab12" || p.Size != 52 || p.Declaration != "n1/3" ||
		len(p.Detail) > events.MaxRefusalDetail || !strings.HasPrefix(p.Detail, "unchanged: -1") {
		t.Fatalf("recorded %v %+v", ev, p)
	}

	h2 := commands.NewHandler(store, events.NewRegistry(), commands.WithClock(func() time.Time { return doorNow.Add(time.Hour) }))
	if again, err := h2.RecordRefusal(ctx, r); err != nil || len(again) != 0 {
		t.Fatalf("the same message refused again: %v, %v; want nothing appended", again, err)
	}
	if n := strings.Count(strings.Join(streamTypes(t, store, "node-n1"), " "), events.TypeReportRefused); n != 1 {
		t.Fatalf("%d report.refused, want 1", n)
	}
	other := r
	other.Digest = "sha256:cd34"
	if again, err := h.RecordRefusal(ctx, other); err != nil || len(again) != 1 {
		t.Fatalf("another message refused: %v, %v; want it recorded", again, err)
	}

	ghost := r
	ghost.Node = "ghost"
	_, err = h.RecordRefusal(ctx, ghost)
	var rej *commands.Rejection
	if !errors.As(err, &rej) || rej.Code != commands.CodeNodeUnknown {
		t.Fatalf("a refusal from an unregistered node: %v, want node-unknown", err)
	}
	if evs, _ := store.ReadStream(ctx, "node-ghost", 0, 0); len(evs) != 0 {
		t.Fatalf("node-ghost has %v", evs)
	}
}

func TestRecordThrottled(t *testing.T) {
	ctx := context.Background()
	h, _ := doorSetup(t)
	stored, err := h.RecordThrottled(ctx, commands.Throttled{Node: "n1", Deferred: 240, From: doorNow, To: doorNow.Add(time.Minute), Rate: 1, Burst: 64})
	if err != nil || len(stored) != 1 || stored[0].Type != events.TypeReportThrottled {
		t.Fatalf("stored %v, %v", stored, err)
	}
	if _, err := h.RecordThrottled(ctx, commands.Throttled{Node: "ghost", Deferred: 1}); !errors.Is(err, commands.ErrRejected) {
		t.Fatalf("throttled of an unregistered node: %v", err)
	}
}
