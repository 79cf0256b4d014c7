package projections_test

import (
	"strings"
	"testing"
	"time"

	"meshplane/events"
	"meshplane/projections"
)

func TestTokens(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sum := strings.Repeat("ab", 32)
	tok := projections.NewTokens()
	fold := func(v uint64, p events.Payload) {
		t.Helper()
		if err := tok.Fold(events.Event{Stream: "token-alice", Version: v, Type: p.EventType(), At: at.Add(time.Duration(v) * time.Minute)}, p); err != nil {
			t.Fatal(err)
		}
	}
	fold(1, events.TokenCreated{Name: "alice", TokenID: sum[:16], SecretSHA256: sum, By: "operator:admin"})
	if x, ok := tok.Live("alice"); !ok || x.ID != sum[:16] || x.By != "operator:admin" || !x.Created.Equal(at.Add(time.Minute)) {
		t.Fatalf("live alice: %+v, %v", x, ok)
	}
	fold(2, events.TokenRevoked{Name: "alice", TokenID: sum[:16], By: "operator:bob"})
	if _, ok := tok.Live("alice"); ok {
		t.Fatal("alice's token is live after its revoke")
	}
	x, ok := tok.Lookup(sum[:16])
	if !ok || x.Revoked.IsZero() || x.RevokedBy != "operator:bob" || x.SecretSHA256 != sum {
		t.Fatalf("lookup: %+v, %v", x, ok)
	}
	if _, ok := tok.Lookup("0000000000000000"); ok {
		t.Fatal("an id never made is found")
	}
	if l := tok.List(); len(l) != 1 {
		t.Fatalf("list: %+v", l)
	}
	tok.Reset()
	if l := tok.List(); len(l) != 0 {
		t.Fatalf("list after reset: %+v", l)
	}
}
