package projections

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

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

func TestCollapse(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	apply := func(pos uint64, node, summary string) Entry {
		return Entry{Position: pos, At: at(int(pos)), Node: node, Type: events.TypeApplyReported, Declaration: node + "/1", Summary: summary}
	}
	idle := "applied 3 resource(s)"
	busy := "applied 3 resource(s); replaced web (image)"
	marked := apply(9, "a", idle)
	marked.Churn = "churn loop cleared after 4 passes"
	for _, tc := range []struct {
		name string
		in   []Entry
		want []string // position[xcount]
	}{
		{"nothing to collapse", []Entry{apply(1, "a", idle), apply(2, "a", busy)}, []string{"1", "2"}},
		{"a quiet run", []Entry{apply(1, "a", busy), apply(2, "a", idle), apply(3, "a", idle), apply(4, "a", idle)}, []string{"1", "2x3"}},
		{"runs of two nodes interleaved", []Entry{apply(1, "a", idle), apply(2, "b", idle), apply(3, "a", idle), apply(4, "b", idle)}, []string{"1x2", "2x2"}},
		{"an event of the node between breaks a run", []Entry{apply(1, "a", idle), {Position: 2, Node: "a", Type: events.TypeModuleAssigned, Summary: "x"}, apply(3, "a", idle)}, []string{"1", "2", "3"}},
		{"a churn mark breaks a run", []Entry{apply(8, "a", idle), marked, apply(10, "a", idle)}, []string{"8", "9", "10"}},
		{"the same heavy outcome collapses too", []Entry{apply(1, "a", busy), apply(2, "a", busy)}, []string{"1x2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, en := range Collapse(tc.in) {
				s := strconv.FormatUint(en.Position, 10)
				if en.Run != nil {
					s += "x" + strconv.Itoa(en.Run.Count)
					if en.Run.FirstPosition != en.Position || !en.Run.From.Equal(en.At) || en.Run.To.Before(en.Run.From) {
						t.Errorf("run %+v of entry %d", en.Run, en.Position)
					}
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("collapsed to %v, want %v", got, tc.want)
			}
		})
	}
	g := newGen(t).pass("a", "a/1", "d1", nil, 4, 2).pass("a", "a/2", "d1", nil, 4, 0)
	got := g.folded().Timeline.Query(Filter{Type: events.TypeApplyReported})
	if len(got) != 2 || got[0].Idle || !got[1].Idle {
		t.Errorf("Idle: a replacing apply is not idle, a quiet one is: %+v", got)
	}
}
