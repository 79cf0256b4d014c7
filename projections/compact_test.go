package projections_test

import (
	"context"
	"encoding/json"
	"testing"

	"meshplane/events"
	"meshplane/events/memstore"
	"meshplane/projections"
	"meshplane/sim"
)

// fullApply is apply.reported as it was written before the compact form:
// every list present, the held list repeated, the digest and apply id in
// every report.
type fullApply struct {
	Node        string            `json:"node"`
	Declaration string            `json:"declaration"`
	Sent        int               `json:"sent"`
	Applied     int               `json:"applied"`
	Created     []string          `json:"created"`
	Replaced    []events.Replaced `json:"replaced"`
	Removed     []string          `json:"removed"`
	Held        []events.Held     `json:"held"`
	Failed      []events.Failed   `json:"failed"`
	Unchanged   int               `json:"unchanged"`
	Updated     []events.Replaced `json:"updated,omitempty"`
	ApplyID     string            `json:"apply_id"`
	Digest      string            `json:"digest"`
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writtenFull rewrites every apply.reported of evs in the full form, as the
// code before the compact form wrote it, and counts the compact records it
// found (a held list named by held_since, a digest or apply id left out).
func writtenFull(t *testing.T, reg *events.Registry, evs []events.Event) (full []events.Event, heldSince, noDigest, noApplyID int) {
	t.Helper()
	reports := projections.NewReports()
	for _, ev := range evs {
		if ev.Type != events.TypeApplyReported {
			full = append(full, ev)
			continue
		}
		a, err := events.DecodeAs[events.ApplyReported](reg, ev)
		if err != nil {
			t.Fatal(err)
		}
		if a.HeldSince != "" {
			heldSince++
		}
		if a.Digest == "" {
			noDigest++
		}
		if a.ApplyID == "" {
			noApplyID++
		}
		r, err := reports.Resolve(ev, a)
		if err != nil {
			t.Fatalf("resolve %s: %v", ev, err)
		}
		data, err := json.Marshal(fullApply{
			Node: r.Node, Declaration: r.Declaration, Sent: r.Sent, Applied: r.Applied,
			Created: orEmpty(r.Created), Replaced: orEmpty(r.Replaced), Removed: orEmpty(r.Removed),
			Held: orEmpty(r.Held), Failed: orEmpty(r.Failed), Unchanged: r.Unchanged, Updated: r.Updated,
			ApplyID: r.ApplyID, Digest: r.Digest,
		})
		if err != nil {
			t.Fatal(err)
		}
		ev.Data = data
		full = append(full, ev)
	}
	return full, heldSince, noDigest, noApplyID
}

// answers folds evs into a fresh set of projections and returns, as JSON,
// every answer the CLI gives from them: the snapshot of every projection,
// and per node its status, holds, churn episodes, timeline, and why for
// every resource any apply touched.
func answers(t *testing.T, reg *events.Registry, evs []events.Event) map[string]string {
	t.Helper()
	store := memstore.New()
	defer store.Close()
	ctx := context.Background()
	for _, ev := range evs {
		if _, err := store.Append(ctx, ev.Stream, events.Any, ev); err != nil {
			t.Fatal(err)
		}
	}
	views := projections.New()
	runner := projections.NewRunner(store, reg, views.All()...)
	if err := runner.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if kept, n := runner.Failures(); n > 0 {
		t.Fatalf("%d events not folded: %+v", n, kept)
	}
	out := map[string]string{}
	put := func(key string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out[key] = string(b)
	}
	put("snapshot", views)
	for _, node := range views.Status.Nodes() {
		st, err := views.Status.Of(node)
		if err != nil {
			t.Fatal(err)
		}
		put("status "+node, st)
		holds, err := views.Holds.Of(node)
		if err == nil {
			put("holds "+node, holds)
		}
		put("churn "+node, views.Churn.Episodes(node))
		tl := views.Timeline.Query(projections.Filter{Node: node})
		put("timeline "+node, tl)
		for _, en := range tl {
			for _, r := range en.Resources {
				why, err := views.Timeline.Why(node, r)
				if err != nil {
					t.Fatal(err)
				}
				put("why "+node+" "+r, why)
			}
		}
	}
	return out
}

// The projections answer every query alike whether the stream holds the
// compact apply reports this build writes or the same history written in
// full, as before.
func TestCompactReportsAnswerAsFullOnes(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	defer store.Close()
	m := sim.New(store)
	w := sim.DefaultWorkload
	w.Nodes = 6
	w.AdoptedEvery = 2 // three adopted nodes, with holds that change as modules move
	w.ReassignEvery = 2
	if err := m.Generate(ctx, w, 600); err != nil {
		t.Fatal(err)
	}
	compact, err := store.ReadAll(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	reg := events.NewRegistry()
	full, heldSince, noDigest, noApplyID := writtenFull(t, reg, compact)
	if heldSince == 0 || noDigest == 0 || noApplyID == 0 {
		t.Fatalf("the generated history has %d reports naming an earlier held list, %d without a digest, %d without an apply id: nothing compact to compare",
			heldSince, noDigest, noApplyID)
	}
	got, want := answers(t, reg, compact), answers(t, reg, full)
	if len(got) != len(want) {
		t.Fatalf("%d answers from compact records, %d from full ones", len(got), len(want))
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s differs:\ncompact %s\n   full %s", key, got[key], w)
		}
	}
	t.Logf("%d events, %d answers compared; %d reports name an earlier held list, %d leave the digest out",
		len(compact), len(want), heldSince, noDigest)
}
