package web

import (
	"fmt"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/projections"
)

// TestParseApplySummary holds the reading of an apply's counts to the lines
// the timeline itself writes: each case folds an apply.reported into a
// projections.Timeline and parses the entry's summary.
func TestParseApplySummary(t *testing.T) {
	names := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%d", prefix, i)
		}
		return out
	}
	replaced := func(n int, fields ...string) []events.Replaced {
		out := make([]events.Replaced, n)
		for i := range out {
			out[i] = events.Replaced{Name: fmt.Sprintf("r-%d", i), Fields: fields}
		}
		return out
	}
	held := func(module string, n int) []events.Held {
		out := make([]events.Held, n)
		for i := range out {
			out[i] = events.Held{Name: fmt.Sprintf("%s-h%d", module, i), Module: module, Reason: "found on this adopted node; not touched until " + module + " is taken"}
		}
		return out
	}
	cases := []struct {
		name string
		r    events.ApplyReported
	}{
		{"quiet", events.ApplyReported{Applied: 4, Unchanged: 4}},
		{"seed 002's worked count", events.ApplyReported{Applied: 2, Created: []string{"proxy", "acme"}, Held: held("route-proxy", 2)}},
		{"held by two modules", events.ApplyReported{Applied: 2, Held: append(held("photos", 3), held("route-proxy", 2)...)}},
		{"more created than a summary lists", events.ApplyReported{Applied: 12, Created: names("c", 12)}},
		{"replaced with fields (commas inside)", events.ApplyReported{Applied: 7, Replaced: replaced(7, "mounts", "env.ROSTER", "image")}},
		{"replaced without fields", events.ApplyReported{Applied: 2, Replaced: replaced(2)}},
		{"every kind", events.ApplyReported{
			Applied: 9, Created: names("c", 2), Replaced: replaced(3, "hosts"), Updated: replaced(1, "mode"),
			Removed: names("gone", 6), Held: held("mail", 1),
			Failed: []events.Failed{{Name: "web", Error: "pull: denied; retry (later), maybe"}, {Name: "db", Error: "x"}},
		}},
		{"failed only", events.ApplyReported{Applied: 0, Failed: []events.Failed{{Name: "web", Error: "no such image"}}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Node, tc.r.Declaration = "novox", "novox/1"
			tc.r.Sent = tc.r.Applied + len(tc.r.Held) + len(tc.r.Failed)
			tl := projections.NewTimeline()
			ev := events.Event{Stream: "node-novox", Position: uint64(i + 1), Version: 1, Type: events.TypeApplyReported, At: time.Unix(0, 0)}
			if err := tl.Fold(ev, tc.r); err != nil {
				t.Fatal(err)
			}
			es := tl.Query(projections.Filter{Node: "novox"})
			if len(es) != 1 {
				t.Fatalf("timeline holds %d entries, want 1", len(es))
			}
			got, ok := ParseApplySummary(es[0].Summary)
			want := Counts{
				Applied: tc.r.Applied, Created: len(tc.r.Created), Replaced: len(tc.r.Replaced), Updated: len(tc.r.Updated),
				Removed: len(tc.r.Removed), Held: len(tc.r.Held), Failed: len(tc.r.Failed),
			}
			if !ok || got != want {
				t.Errorf("ParseApplySummary(%q)\n got %+v, %v\nwant %+v, true", es[0].Summary, got, ok, want)
			}
		})
	}
}

func TestParseApplySummaryRefuses(t *testing.T) {
	for _, s := range []string{"", "composed novox/1 for novox: 3 resource(s)", "applied x resource(s)", "applied -1 resource(s)", "applied 3"} {
		t.Run(s, func(t *testing.T) {
			if c, ok := ParseApplySummary(s); ok || c != (Counts{}) {
				t.Errorf("ParseApplySummary(%q) = %+v, %v; want nothing, false", s, c, ok)
			}
		})
	}
}

// FuzzParseApplySummary: any line reads without a panic, and never as
// negative counts.
func FuzzParseApplySummary(f *testing.F) {
	for _, s := range []string{
		"applied 2 resource(s), 2 held for untaken modules (route-proxy: 2); created acme, proxy",
		"applied 6 resource(s); replaced a (hosts), b (hosts) and 4 more; churn loop detected (episode: 2 heavy passes, 0 flips)",
		"applied 0 resource(s), 1 failed; failed web (x; y)",
		"applied 1 resource(s); removed a, b and 99999999999999999999 more",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, _ := ParseApplySummary(s)
		for _, n := range []int{c.Applied, c.Created, c.Replaced, c.Updated, c.Removed, c.Held, c.Failed} {
			if n < 0 {
				t.Fatalf("ParseApplySummary(%q) = %+v: a negative count", s, c)
			}
		}
	})
}
