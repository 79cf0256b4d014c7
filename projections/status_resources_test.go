package projections

import (
	"errors"
	"reflect"
	"testing"

	"meshplane/events"
)

// TestStatusResources: every resource of the applied declaration with the
// state its last apply left it in — running (created, replaced, or
// unchanged and so absent from the report), in place, held with its
// reason, failed with its error, restarted after it was found stopped —
// in the declaration's order, and the resources the apply removed. A
// later compose that is not applied does not change the answer: it is
// what runs, not what is wanted.
func TestStatusResources(t *testing.T) {
	res := []events.ResourceRef{
		{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:w"},
		{Name: "db", Kind: "container", Module: "forge", Digest: "sha256:d"},
		{Name: "/srv/forge", Kind: "directory", Module: "forge", Digest: "sha256:s"},
		{Name: "proxy", Kind: "container", Module: "route-proxy", Digest: "sha256:p"},
		{Name: "ca", Kind: "container", Module: "route-proxy", Digest: "sha256:c"},
		{Name: "cache", Kind: "container", Module: "forge", Digest: "sha256:k"},
	}
	g := newGen(t).assign("forge", "novox").assign("route-proxy", "novox").
		composed("novox", "novox/1", "sha256:one", nil, res).
		applied("novox", events.ApplyReported{
			Declaration: "novox/1", Sent: 6, Applied: 4, Unchanged: 1,
			Replaced: []events.Replaced{{Name: "web", Fields: []string{"env.GREETING"}}},
			Updated:  []events.Replaced{{Name: "cache", Fields: []string{"running"}}},
			Held:     []events.Held{{Name: "ca", Module: "route-proxy", Reason: "would mount /var/lib/ca, found on this adopted node; not run until route-proxy is taken"}},
			Failed:   []events.Failed{{Name: "db", Error: "pull scenario.invalid/db:2: not found"}},
			Created:  []string{"proxy"},
			Removed:  []string{"old"},
		}).
		composed("novox", "novox/2", "sha256:two", nil, res[:1])
	got, err := g.folded().Status.Resources("novox")
	if err != nil {
		t.Fatal(err)
	}
	if got.Applied == nil || got.Applied.Declaration != "novox/1" || got.Applied.Digest != "sha256:one" || got.Partial {
		t.Fatalf("applied %+v partial %v, want novox/1 in full", got.Applied, got.Partial)
	}
	want := []ResourceState{
		{Name: "web", Kind: "container", Module: "forge", Digest: "sha256:w", State: ResourceRunning, Outcome: ActionReplaced, Fields: []string{"env.GREETING"}},
		{Name: "db", Kind: "container", Module: "forge", Digest: "sha256:d", State: ResourceFailed, Outcome: ActionFailed, Reason: "pull scenario.invalid/db:2: not found"},
		{Name: "/srv/forge", Kind: "directory", Module: "forge", Digest: "sha256:s", State: ResourceInPlace, Outcome: ActionUnchanged},
		{Name: "proxy", Kind: "container", Module: "route-proxy", Digest: "sha256:p", State: ResourceRunning, Outcome: ActionCreated},
		{Name: "ca", Kind: "container", Module: "route-proxy", Digest: "sha256:c", State: ResourceHeld, Outcome: ActionHeld,
			Reason: "would mount /var/lib/ca, found on this adopted node; not run until route-proxy is taken"},
		{Name: "cache", Kind: "container", Module: "forge", Digest: "sha256:k", State: ResourceRestarted, Outcome: ActionUpdated, Fields: []string{"running"}, Reason: ReasonRestarted},
	}
	if !reflect.DeepEqual(got.Resources, want) {
		t.Errorf("resources:\n got %+v\nwant %+v", got.Resources, want)
	}
	if !reflect.DeepEqual(got.Removed, []string{"old"}) {
		t.Errorf("removed %v, want [old]", got.Removed)
	}
}

// TestStatusResourcesNone: a node that never reported has no applied
// declaration and no resources (an empty list, not nil); an unknown node
// is ErrUnknownNode.
func TestStatusResourcesNone(t *testing.T) {
	g := newGen(t).assign("forge", "quiet").composed("quiet", "quiet/1", "sha256:q", nil, resources("forge", 2, "A"))
	got, err := g.folded().Status.Resources("quiet")
	if err != nil {
		t.Fatal(err)
	}
	if got.Applied != nil || got.Resources == nil || len(got.Resources) != 0 {
		t.Errorf("a node that never reported: %+v", got)
	}
	if _, err := g.folded().Status.Resources("nosuch"); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v, want ErrUnknownNode", err)
	}
}

// TestStatusResourcesPartial: when the applied declaration's compose is
// not known (an apply of a declaration never composed here), the answer
// says so and lists what the report named.
func TestStatusResourcesPartial(t *testing.T) {
	g := newGen(t).applied("n", events.ApplyReported{
		Declaration: "n/9", Sent: 2, Applied: 1,
		Created: []string{"a"},
		Held:    []events.Held{{Name: "b", Module: "m", Reason: "found"}},
	})
	got, err := g.folded().Status.Resources("n")
	if err != nil {
		t.Fatal(err)
	}
	want := []ResourceState{
		{Name: "a", State: ResourceRunning, Outcome: ActionCreated},
		{Name: "b", Module: "m", State: ResourceHeld, Outcome: ActionHeld, Reason: "found"},
	}
	if !got.Partial || !reflect.DeepEqual(got.Resources, want) {
		t.Errorf("partial %v, resources %+v; want partial and %+v", got.Partial, got.Resources, want)
	}
}
