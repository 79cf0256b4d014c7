package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"meshplane/events"
)

// TestTimelineJSONCarriesAQuietReportsHolds: the timeline's JSON entry of
// a quiet report, stored with held_since naming a report ten held lists
// back, gives its holds in full, with their reasons.
func TestTimelineJSONCarriesAQuietReportsHolds(t *testing.T) {
	e := newEnv(t)
	reg := events.NewRegistry()
	at := time.Date(2026, 9, 29, 22, 46, 0, 0, time.UTC)
	stream := events.NodeStream("a")
	add := func(actor string, p events.Payload) events.Event {
		t.Helper()
		ev, err := reg.New(stream, p, events.Meta{ID: events.NewID(), At: at, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		at = at.Add(time.Minute)
		stored, err := e.store.Append(e.ctx, stream, events.Any, ev)
		if err != nil {
			t.Fatal(err)
		}
		return stored[0]
	}
	add("operator:jo", events.NodeRegistered{Node: "a"})
	add("controller", events.DeclarationComposed{Node: "a", Declaration: "a/1", Digest: "sha256:d1",
		Resources: []events.ResourceRef{{Name: "ca", Kind: "directory", Module: "route-proxy", Digest: "sha256:ca"}}})
	held := events.Held{Name: "ca", Module: "route-proxy", Reason: "found on disk, module not taken"}
	first := add("agent:a", events.ApplyReported{Node: "a", Declaration: "a/1", Sent: 2, Applied: 1, Unchanged: 1, Held: []events.Held{held}})
	for i := range 9 {
		add("agent:a", events.ApplyReported{Node: "a", Declaration: "a/1", Sent: 2, Applied: 1, Unchanged: 1,
			Held: []events.Held{{Name: fmt.Sprintf("other-%d", i), Module: "photos", Reason: "found"}}})
	}
	quiet := add("agent:a", events.ApplyReported{Node: "a", Declaration: "a/1", Sent: 2, Applied: 1, Unchanged: 1, HeldSince: first.ID.String()})

	// The node's last apply report (the controller's own pass may append
	// a compose or a push for a after it), once the projections folded it.
	type entry struct {
		Position uint64        `json:"position"`
		Held     []events.Held `json:"held"`
	}
	var page struct {
		Entries []entry         `json:"entries"`
		Skipped json.RawMessage `json:"skipped"`
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, e.srv.URL+"/v1/timeline?node=a&type=apply.reported&limit=1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/timeline: %s, %v", res.Status, err)
		}
		if len(page.Entries) == 1 && page.Entries[0].Position == quiet.Position || time.Now().After(deadline) {
			break
		}
	}
	if len(page.Entries) != 1 || page.Entries[0].Position != quiet.Position ||
		len(page.Entries[0].Held) != 1 || page.Entries[0].Held[0] != held {
		t.Fatalf("the quiet report's entry: %+v (skipped %s); want position %d holding %+v", page.Entries, page.Skipped, quiet.Position, held)
	}
}
