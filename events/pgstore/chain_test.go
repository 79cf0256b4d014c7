package pgstore

import (
	"context"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/events/pgstore/pgtest"
)

// TestChainTampered: rows changed with SQL behind the store's back: a
// payload rewritten, a row removed and the later ones moved down, two
// rows swapped, the newest rows deleted. The chain names the first
// position at fault each time (the last only against the anchor).
func TestChainTampered(t *testing.T) {
	pgtest.Need(t, srv)
	for _, tc := range []struct {
		name string
		sql  []string
		pos  uint64
	}{
		{"payload rewritten", []string{`UPDATE events SET data = '{"tag":"x"}' WHERE position = 4`}, 4},
		{"row removed", []string{
			// The rows after it moved down one, each with its own chain value.
			`DELETE FROM events WHERE position = 3`,
			`UPDATE events SET position = position + 1000000 WHERE position > 3`,
			`UPDATE events SET position = position - 1000001 WHERE position > 1000000`,
		}, 3},
		{"rows swapped", []string{
			`UPDATE events SET position = 1000005 WHERE position = 5`,
			`UPDATE events SET position = 5 WHERE position = 6`,
			`UPDATE events SET position = 6 WHERE position = 1000005`,
		}, 5},
		{"newest rows deleted", []string{`DELETE FROM events WHERE position > 7`}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s := openURL(t, srv.Database(t))
			for _, stream := range []string{"node-a", "node-b"} {
				evs := make([]events.Event, 5)
				for i := range evs {
					evs[i] = events.Event{ID: events.NewID(), Type: "test.chained", Schema: 1, Data: []byte(`{"tag":"` + stream + `"}`)}
				}
				if _, err := s.Append(ctx, stream, events.NoStream, evs...); err != nil {
					t.Fatal(err)
				}
			}
			head, err := s.ChainHead(ctx)
			if err != nil || head.Position != 10 || head.Chain.IsZero() {
				t.Fatalf("ChainHead: %s, %v", head, err)
			}
			for _, q := range tc.sql {
				if _, err := s.pool.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			all, err := s.ReadAll(ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			v := events.NewChainVerifier(&head)
			for _, e := range all {
				v.Add(e)
			}
			r := v.Report()
			if r.Break == nil || r.Break.Position != tc.pos {
				t.Fatalf("verify: %+v, want a break at %d", r, tc.pos)
			}
		})
	}
}
