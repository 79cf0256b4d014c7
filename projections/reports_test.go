package projections

import (
	"errors"
	"slices"
	"testing"

	"meshplane/events"
)

func TestReportsResolve(t *testing.T) {
	held := []events.Held{{Name: "ca", Module: "route-proxy", Reason: "found"}}
	other := []events.Held{{Name: "photos", Module: "photos", Reason: "found"}}
	ev := func(pos uint64) events.Event {
		return events.Event{ID: id(pos), Stream: "node-novox", Position: pos, Type: events.TypeApplyReported}
	}
	steps := []struct {
		name    string
		in      events.ApplyReported
		want    events.ApplyReported // ApplyID filled from the event by the test
		wantErr error
	}{
		{"a full report is kept as it is",
			events.ApplyReported{Node: "novox", Declaration: "novox/1", Digest: "sha256:a", Held: held},
			events.ApplyReported{Node: "novox", Declaration: "novox/1", Digest: "sha256:a", Held: held}, nil},
		{"held_since names it; the digest of the same declaration",
			events.ApplyReported{Node: "novox", Declaration: "novox/1", HeldSince: id(1).String()},
			events.ApplyReported{Node: "novox", Declaration: "novox/1", Digest: "sha256:a", Held: held}, nil},
		{"a new declaration without a digest stays without",
			events.ApplyReported{Node: "novox", Declaration: "novox/2", HeldSince: id(1).String()},
			events.ApplyReported{Node: "novox", Declaration: "novox/2", Held: held}, nil},
		{"a new held list in full",
			events.ApplyReported{Node: "novox", Declaration: "novox/2", Digest: "sha256:b", Held: other},
			events.ApplyReported{Node: "novox", Declaration: "novox/2", Digest: "sha256:b", Held: other}, nil},
		{"an older full list may still be named",
			events.ApplyReported{Node: "novox", Declaration: "novox/2", HeldSince: id(1).String()},
			events.ApplyReported{Node: "novox", Declaration: "novox/2", Digest: "sha256:b", Held: held}, nil},
		{"a report never seen is unresolved",
			events.ApplyReported{Node: "novox", Declaration: "novox/2", HeldSince: id(99).String()},
			events.ApplyReported{Node: "novox", Declaration: "novox/2", Digest: "sha256:b"}, ErrUnresolved},
		{"a stored apply id is kept",
			events.ApplyReported{Node: "novox", Declaration: "novox/2", ApplyID: "kept"},
			events.ApplyReported{Node: "novox", Declaration: "novox/2", Digest: "sha256:b", ApplyID: "kept"}, nil},
	}
	r := NewReports()
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			e := ev(uint64(i + 1))
			got, err := r.Resolve(e, st.in)
			if !errors.Is(err, st.wantErr) {
				t.Fatalf("err %v, want %v", err, st.wantErr)
			}
			want := st.want
			if want.ApplyID == "" {
				want.ApplyID = e.ID.String()
			}
			if got.Declaration != want.Declaration || got.Digest != want.Digest || got.ApplyID != want.ApplyID ||
				got.HeldSince != "" || !slices.Equal(got.Held, want.Held) {
				t.Fatalf("resolved\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestIdle: a replacing apply is not idle, a quiet one is.
func TestIdle(t *testing.T) {
	g := newGen(t).pass("a", "a/1", "d1", nil, 4, 2).pass("a", "a/2", "d1", nil, 4, 0)
	got := g.folded().Timeline.Query(Filter{Type: events.TypeApplyReported})
	if len(got) != 2 || got[0].Idle || !got[1].Idle {
		t.Errorf("Idle: a replacing apply is not idle, a quiet one is: %+v", got)
	}
}
