package projections

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"meshplane/events"
)

// pagedStore changes what ReadAll returns: at most max events a call (0: as
// asked), and without position skip (0: none).
type pagedStore struct {
	events.Store
	max  int
	skip uint64
}

func (s pagedStore) ReadAll(ctx context.Context, after uint64, limit int) ([]events.Event, error) {
	if s.max > 0 && (limit <= 0 || limit > s.max) {
		limit = s.max
	}
	page, err := s.Store.ReadAll(ctx, after, limit)
	out := page[:0:0]
	for _, ev := range page {
		if ev.Position != s.skip {
			out = append(out, ev)
		}
	}
	return out, err
}

// TestCatchUpReadsPagesAsideAndInOrder: the workers read pages side by
// side; whatever pages the store returns (full, short of what was asked),
// every projection folds every event once, in order, as one reading of the
// whole log does; and a store that skips a position fails the catch-up,
// naming it.
func TestCatchUpReadsPagesAsideAndInOrder(t *testing.T) {
	ctx := context.Background()
	g := history(t, 11, 2000)
	if len(g.evs) <= PageSize+100 {
		t.Fatalf("history of %d events: want more than a page of %d", len(g.evs), PageSize)
	}
	store := stored(t, g)
	reg := events.NewRegistry()
	ref := New()
	if err := NewRunner(pagedStore{Store: store, max: len(g.evs)}, reg, ref.All()...).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, ref)
	cases := []struct {
		name    string
		store   pagedStore
		wantErr string
	}{
		{"full pages", pagedStore{Store: store}, ""},
		{"short pages", pagedStore{Store: store, max: PageSize/3 + 1}, ""},
		{"one event a read", pagedStore{Store: store, max: 1}, ""},
		{"a skipped position", pagedStore{Store: store, skip: PageSize + 7}, "expected position 4103, store returned 4104"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := New()
			r := NewRunner(tc.store, reg, set.All()...)
			err := r.Rebuild(ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("rebuild = %v, want %q", err, tc.wantErr)
				}
				if r.Position() != PageSize {
					t.Errorf("position %d after the failure, want %d (the last whole page)", r.Position(), PageSize)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Position() != uint64(len(g.evs)) {
				t.Errorf("position %d, want %d", r.Position(), len(g.evs))
			}
			if got := snapshot(t, set); !bytes.Equal(got, want) {
				t.Error("the projections differ from one reading of the whole log")
			}
		})
	}
}
