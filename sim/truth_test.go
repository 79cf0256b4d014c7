package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"meshplane/events/memstore"
)

// TestTruthIsWhatWasInjected: the truth is the faults' nodes and windows,
// worked out from the SPEC and the nodes each fault drew, not from what
// the mesh reported: a loop on every node whose containers were removed,
// over the window; a flip on every other node while one is read lossily;
// nothing for a store in recovery or a cut bus.
func TestTruthIsWhatWasInjected(t *testing.T) {
	tests := []struct {
		spec string
		want func(r *Run) []TruthEpisode
	}{
		{"remove:count=2,passes=3-5", func(r *Run) []TruthEpisode {
			var out []TruthEpisode
			for _, n := range r.chosen[0] {
				out = append(out, TruthEpisode{Node: n, Loop: true, Start: 3, End: 5})
			}
			return out
		}},
		{"lossy:count=1,passes=3-8,every=2", func(r *Run) []TruthEpisode {
			var out []TruthEpisode
			for _, n := range r.Nodes() {
				if n != r.chosen[0][0] {
					out = append(out, TruthEpisode{Node: n, Flip: true, Start: 3, End: 8})
				}
			}
			return out
		}},
		{"reads:count=1,passes=3-8,every=2;cut:count=2,passes=2-5", func(*Run) []TruthEpisode { return nil }},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			faults, err := ParseFaults(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			store := memstore.New()
			defer store.Close()
			r, err := NewRun(ctx, store, Config{Nodes: 6, Modules: 8, Passes: 10, Seed: 7, Faults: faults})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Passes(ctx); err != nil {
				t.Fatal(err)
			}
			want := tc.want(r)
			slices.SortFunc(want, func(a, b TruthEpisode) int { return strings.Compare(a.Node, b.Node) })
			if got := r.Truth(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("truth %+v\nwant  %+v", got, want)
			}
		})
	}
}
