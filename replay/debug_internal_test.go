package replay

import (
	"context"
	"os"
	"testing"

	"meshplane/events"
)

func TestDebugRounds(t *testing.T) {
	p := os.Getenv("REPLAY_DEBUG")
	if p == "" {
		return
	}
	reg := events.NewRegistry()
	h, err := readHistory(context.Background(), p, reg, 0)
	if err != nil {
		t.Fatal(err)
	}
	for k, rd := range h.rounds {
		t.Logf("round %d (%d..%d]", k+1, rd.from, rd.to)
		for _, ev := range h.events[rd.from:rd.to] {
			t.Logf("   %d %s %s %s %.120s", ev.Position, ev.Stream, ev.Type, ev.Actor, ev.Data)
		}
	}
}
