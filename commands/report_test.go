package commands_test

import (
	"context"
	"errors"
	"math"
	"slices"
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
	counted := pushed
	counted.Resources, counted.Counted = []string{"web", "db", "cache"}, true
	counted.Declared = func(name string) bool { return slices.Contains([]string{"web", "db", "cache", "old-web"}, name) }
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

		// Issue 31, item 2: what a report may say.
		{"counted: as the agent says it", func(*commands.Delivery) {}, &counted, ""},
		{"counted: removed one an earlier declaration had", func(d *commands.Delivery) { d.Report.Removed = []string{"old-web"} }, &counted, ""},
		{"counted: failed to apply the hosts file and remove an old one", func(d *commands.Delivery) {
			d.Report.Applied, d.Report.Unchanged = 2, 1
			d.Report.Failed = []events.Failed{{Name: "db", Error: "e"}, {Name: "/var/lib/meshplane/hosts", Error: "e"}}
		}, &counted, ""},
		{"counted: holds one of its resources", func(d *commands.Delivery) {
			d.Report.Applied, d.Report.Unchanged = 2, 1
			d.Report.Held = []events.Held{{Name: "db", Module: "m", Reason: "not taken"}}
		}, &counted, ""},
		{"sent 0, applied 5, unchanged 5", func(d *commands.Delivery) {
			d.Report = events.ApplyReported{Node: "n1", Declaration: "n1/3", Sent: 0, Applied: 5, Unchanged: 5}
		}, &counted, events.RefusedCounts},
		{"counts of the largest int", func(d *commands.Delivery) {
			d.Report = events.ApplyReported{Node: "n1", Declaration: "n1/3", Sent: math.MaxInt64, Applied: math.MaxInt64, Unchanged: math.MaxInt64}
		}, &pushed, events.RefusedCounts},
		{"more than the declaration has", func(d *commands.Delivery) {
			d.Report = events.ApplyReported{Node: "n1", Declaration: "n1/3", Sent: 5, Applied: 5, Unchanged: 5}
		}, &counted, events.RefusedCounts},
		{"created a resource the declaration lacks", func(d *commands.Delivery) { d.Report.Created = []string{"evil-resource"} }, &counted, events.RefusedCounts},
		{"created on a declaration of 0 resources", func(d *commands.Delivery) {
			d.Report = events.ApplyReported{Node: "n1", Declaration: "n1/3", Applied: 1, Created: []string{"evil-resource"}}
		}, &commands.DeclarationFacts{Composed: true, ComposedAt: doorNow.Add(-time.Hour), Pushed: true, Counted: true}, events.RefusedCounts},
		{"replaced a resource the declaration lacks", func(d *commands.Delivery) {
			d.Report.Created, d.Report.Replaced = nil, []events.Replaced{{Name: "evil", Fields: []string{"image"}}}
		}, &counted, events.RefusedCounts},
		{"held a resource the declaration lacks", func(d *commands.Delivery) {
			d.Report.Applied, d.Report.Unchanged = 2, 1
			d.Report.Held = []events.Held{{Name: "evil", Module: "m", Reason: "not taken"}}
		}, &counted, events.RefusedCounts},
		{"removed one no declaration had", func(d *commands.Delivery) { d.Report.Removed = []string{"evil-resource"} }, &counted, events.RefusedCounts},
		{"failed one no declaration had", func(d *commands.Delivery) {
			d.Report.Applied, d.Report.Unchanged = 2, 1
			d.Report.Failed = []events.Failed{{Name: "evil", Error: "e"}}
		}, &counted, events.RefusedCounts},
		{"a resource name of 1 MiB", func(d *commands.Delivery) { d.Report.Created = []string{strings.Repeat("x", 1<<20)} }, nil, events.RefusedTooLarge},
		{"an error of 5 KiB", func(d *commands.Delivery) {
			d.Report.Applied, d.Report.Unchanged = 2, 1
			d.Report.Failed = []events.Failed{{Name: "db", Error: strings.Repeat("e", 5<<10)}}
		}, &counted, events.RefusedTooLarge},
		{"a hold's reason of 5 KiB", func(d *commands.Delivery) {
			d.Report.Applied, d.Report.Unchanged = 2, 1
			d.Report.Held = []events.Held{{Name: "db", Module: "m", Reason: strings.Repeat("r", 5<<10)}}
		}, &counted, events.RefusedTooLarge},
		{"a declaration id of 1 KiB", func(d *commands.Delivery) { d.Report.Declaration = strings.Repeat("d", 1<<10) }, nil, events.RefusedTooLarge},
		{"held_since not a uuid", func(d *commands.Delivery) { d.Report.HeldSince = "not-a-uuid" }, &counted, events.RefusedMalformed},
		{"a NUL in a name", func(d *commands.Delivery) { d.Report.Created = []string{"we\x00b"} }, nil, events.RefusedMalformed},
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

// TestRecordApplyHeldSince: issue 31, item 1. A report whose held_since
// names no earlier report of its node that carried a held list is refused
// (malformed, its detail naming held_since) and appends nothing; one that
// names such a report is recorded.
func TestRecordApplyHeldSince(t *testing.T) {
	ctx := context.Background()
	h, store := doorSetup(t)
	holding := goodDelivery()
	holding.Report.Applied, holding.Report.Created, holding.Report.Unchanged = 2, nil, 2
	holding.Report.Held = []events.Held{{Name: "db", Module: "m", Reason: "not taken"}}
	if _, err := h.RecordApply(ctx, holding); err != nil {
		t.Fatal(err)
	}
	quiet := goodDelivery() // held nothing
	if _, err := h.RecordApply(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	n2, err := store.ReadStream(ctx, "node-n2", 0, 1)
	if err != nil || len(n2) != 1 {
		t.Fatal(n2, err)
	}
	compact := func(since string) commands.Delivery {
		d := holding
		d.ApplyID = uuid.Must(uuid.NewV7())
		d.Report.Held, d.Report.HeldSince = nil, since
		return d
	}
	before := streamTypes(t, store, "node-n1")
	for _, tc := range []struct{ name, since string }{
		{"the issue's uuid", "00000000-0000-4000-8000-000000000001"},
		{"a random uuid", uuid.NewString()},
		{"another node's event", n2[0].ID.String()},
		{"not a uuid", "not-a-uuid"},
		{"its own report that held nothing", quiet.ApplyID.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.RecordApply(ctx, compact(tc.since))
			refusedFor(t, err, events.RefusedMalformed)
			if !strings.Contains(err.Error(), "held_since") {
				t.Errorf("refusal %q does not name held_since", err)
			}
		})
	}
	if got := streamTypes(t, store, "node-n1"); len(got) != len(before) {
		t.Fatalf("stream n1 is %v, was %v", got, before)
	}
	if _, err := h.RecordApply(ctx, compact(holding.ApplyID.String())); err != nil {
		t.Fatalf("a report naming the one that held: %v", err)
	}
}

// TestRecordApplySameReportAnyAge: issue 31, item 5. The same report sent
// again is recorded once, whatever its age: one older than the node's
// recent applies (the 16 Node.Applies keeps) is a no-op, never
// apply-id-conflict; other content under its id is still refused.
func TestRecordApplySameReportAnyAge(t *testing.T) {
	ctx := context.Background()
	h, _ := doorSetup(t)
	old := goodDelivery()
	first, err := h.RecordApply(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	for range 40 {
		if _, err := h.RecordApply(ctx, goodDelivery()); err != nil {
			t.Fatal(err)
		}
	}
	again := old
	again.ReceivedAt = doorNow.Add(time.Hour)
	stored, err := h.RecordApply(ctx, again)
	if err != nil {
		t.Fatalf("the same report, 40 applies later: %v", err)
	}
	if len(stored) != 1 || stored[0].Position != first[0].Position {
		t.Fatalf("stored %v, want the first %v", stored, first)
	}
	other := old
	other.Report.Created, other.Report.Unchanged = nil, 3
	_, err = h.RecordApply(ctx, other)
	refusedFor(t, err, events.RefusedApplyID)
}
