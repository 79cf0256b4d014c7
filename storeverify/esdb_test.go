package storeverify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"meshplane/events"
	"meshplane/events/esdbstore"
	"meshplane/events/esdbstore/esdbdouble"
	"meshplane/sim"
	"meshplane/storeverify"
)

// TestAnchoredKurrentDB: verify --anchor works on a KurrentDB store (here
// the gRPC double of esdbdouble, not KurrentDB) as on bolt: a simulated
// history is intact against its head, chained from position 1, and an
// anchor past the head is a truncation; the full verify is bolt's only, and
// says to use --anchor.
func TestAnchoredKurrentDB(t *testing.T) {
	ctx := context.Background()
	d, err := esdbdouble.Start(esdbdouble.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	s, err := esdbstore.Open(ctx, d.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.New(s).Generate(ctx, sim.DefaultWorkload, 120); err != nil {
		t.Fatal(err)
	}
	s.Close()
	head, err := storeverify.Head(ctx, d.URL(), "")
	if err != nil || head.Chain.IsZero() || head.Position < 120 {
		t.Fatalf("Head of the KurrentDB store: %s, %v", head, err)
	}
	rep, err := storeverify.Anchored(ctx, d.URL(), "", head.String())
	if err != nil || rep.Err() != nil || !rep.AnchorChecked || rep.Start != 1 || rep.Checked != head.Position {
		t.Fatalf("verify --anchor of the KurrentDB store: %+v, %v, %v", rep, err, rep.Err())
	}
	later := head
	later.Position += 3
	rep, err = storeverify.Anchored(ctx, d.URL(), "", later.String())
	if err != nil || !errors.Is(rep.Err(), events.ErrChainBroken) || rep.Break.Position != head.Position+1 {
		t.Fatalf("verify --anchor past the head: %+v, %v", rep, err)
	}
	if err := storeverify.Supported(d.URL()); !errors.Is(err, storeverify.ErrUnsupported) || !strings.Contains(err.Error(), "--anchor") {
		t.Errorf("Supported(%s): %v, want ErrUnsupported pointing at --anchor", d.URL(), err)
	}
}
