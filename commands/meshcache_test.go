package commands_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"meshplane/commands"
	"meshplane/declaration"
	"meshplane/events"
	"meshplane/events/memstore"
)

// TestMeshCacheComposesAsTheStore: a cache lists each compose only the nodes
// that can change another node's declaration, and remembers reads and
// plans; every node of a mesh holding every kind of node composes the same
// through it as through the store, failures included: an incoherent node,
// and a node whose reads fail (listed to every compose, so that each fails
// naming it, as seed 000 requires).
func TestMeshCacheComposesAsTheStore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	reg := events.NewRegistry()
	add := func(stream string, ps ...events.Payload) {
		t.Helper()
		for _, p := range ps {
			ev, err := reg.New(stream, p, events.Meta{ID: events.NewID(), Actor: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.Append(ctx, stream, events.Any, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	module := func(name string, artifact bool) events.ModuleDefined {
		c := events.ContainerSpec{Name: name + "-app", Image: "registry.example/" + name + ":1"}
		if artifact {
			c = events.ContainerSpec{Name: name + "-app", Artifact: name + "/app"}
		}
		return events.ModuleDefined{Module: name, Spec: events.ModuleSpec{Routes: []string{name + ".mesh.example"}, Containers: []events.ContainerSpec{c}}}
	}
	add(events.ModuleStream("forge"), module("forge", true),
		events.ArtifactRecorded{Module: "forge", Name: "forge/app", Digest: "sha256:ab12"})
	add(events.ModuleStream("web"), module("web", false))
	add(events.ModuleStream("api"), module("api", false))
	setting := func(node, key, value string) events.NodeSettingSet {
		return events.NodeSettingSet{Node: node, Key: key, Value: value}
	}
	nodes := []cacheNode{ // feeds: can change another node's declaration
		{"a-forge", []events.Payload{events.ModuleAssigned{Module: "forge", Node: "a-forge"}, events.ModuleAssigned{Module: "web", Node: "a-forge"},
			setting("a-forge", events.SettingPrivateAddress, "10.0.0.1")}, true},
		{"b-api", []events.Payload{events.ModuleAssigned{Module: "api", Node: "b-api"}}, true},
		{"c-store", []events.Payload{setting("c-store", events.SettingArtifactStore, "5000"), setting("c-store", events.SettingPrivateAddress, "10.0.0.3")}, true},
		{"d-plain", nil, false},
		{"e-broken", []events.Payload{events.ModuleAssigned{Module: "ghost", Node: "e-broken"}}, true},
		{"f-store", []events.Payload{setting("f-store", events.SettingArtifactStore, "6000")}, true},
		{"g-plain", []events.Payload{setting("g-plain", events.SettingPrivateAddress, "10.0.0.7")}, false},
		{"h-forge", []events.Payload{events.ModuleAssigned{Module: "forge", Node: "h-forge"}}, true},
	}
	var feeders []string
	for _, n := range nodes {
		add(events.NodeStream(n.name), append([]events.Payload{events.NodeRegistered{Node: n.name}}, n.events...)...)
		if n.feeds {
			feeders = append(feeders, n.name)
		}
	}
	h := commands.NewHandler(store, reg)
	for _, failing := range []string{"", "d-plain", "b-api"} {
		t.Run("failing="+failing, func(t *testing.T) {
			composesAsTheStore(t, failingReader{h, failing}, nodes, feeders, failing)
		})
	}

	// A node changed during the cache's life composes as the store would, once it
	// is composed: a listed node (the snapshot is made again, and the nodes
	// composed after it see it) and one that was not listed (composed
	// without the snapshot).
	mc := commands.NewMeshCache(h)
	mc.Prepare(ctx)
	if _, err := commands.Compose(ctx, mc.For("a-forge"), "a-forge", "corr"); err != nil {
		t.Fatal(err) // the snapshot is made
	}
	add(events.NodeStream("b-api"), events.ModuleAssigned{Module: "web", Node: "b-api"})
	add(events.NodeStream("d-plain"), events.ModuleAssigned{Module: "api", Node: "d-plain"})
	for _, n := range []string{"b-api", "d-plain", "a-forge", "h-forge"} {
		want, wantErr := commands.Compose(ctx, h, n, "corr")
		got, gotErr := commands.Compose(ctx, mc.For(n), n, "corr")
		if n != "d-plain" {
			// d-plain was not listed when the cache was prepared: the others
			// see its routes from the next cache on, as documented.
			want.Declaration.Roster = slices.DeleteFunc(want.Declaration.Roster, func(r declaration.Route) bool { return r.Node == "d-plain" })
			got.Declaration.Hosts, want.Declaration.Hosts, got.Declaration.Digest, want.Declaration.Digest = "", "", "", ""
			got.Declaration.RosterDigest, want.Declaration.RosterDigest = "", ""
			want.Roster = slices.DeleteFunc(slices.Clone(want.Roster), func(r events.RosterRoute) bool { return r.Node == "d-plain" })
		}
		if wantErr != nil || gotErr != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s, changed during the cache's life: through the cache\n%+v (%v)\nthrough the store:\n%+v (%v)", n, got, gotErr, want, wantErr)
		}
		if n == "a-forge" && !slices.ContainsFunc(got.Declaration.Roster, func(r declaration.Route) bool { return r.Node == "b-api" && r.Name == "web.mesh.example" }) {
			t.Errorf("a-forge, composed after b-api changed, does not route b-api's new name: %v", got.Declaration.Roster)
		}
	}
}

// failingReader is a handler whose reads of one node fail.
type failingReader struct {
	*commands.Handler
	node string
}

func (r failingReader) Node(ctx context.Context, name string) (commands.Node, error) {
	if name == r.node {
		return commands.Node{}, errors.New("injected: the database system is starting up")
	}
	return r.Handler.Node(ctx, name)
}

type cacheNode struct {
	name   string
	events []events.Payload
	feeds  bool
}

func composesAsTheStore(t *testing.T, r commands.Reader, nodes []cacheNode, feeders []string, failing string) {
	ctx := context.Background()
	mc := commands.NewMeshCache(r)
	mc.Prepare(ctx)
	if failing != "" && !slices.Contains(feeders, failing) {
		feeders = slices.Sorted(slices.Values(append(slices.Clone(feeders), failing)))
	}
	if got := mc.Feeders(); !slices.Equal(got, feeders) {
		t.Fatalf("the cache lists %v to each compose, want %v", got, feeders)
	}
	var sawRoster, sawSkipped, sawImage, sawFailed bool
	// Twice: the second round composes from what the first remembered.
	for round := range 2 {
		for _, n := range nodes {
			t.Run(fmt.Sprintf("%d/%s", round, n.name), func(t *testing.T) {
				want, wantErr := commands.Compose(ctx, r, n.name, "corr")
				got, gotErr := commands.Compose(ctx, mc.For(n.name), n.name, "corr")
				if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
					t.Fatalf("compose through the cache: %v, through the store: %v", gotErr, wantErr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("compose through the cache:\n%+v\nthrough the store:\n%+v", got, want)
				}
				sawRoster = sawRoster || len(got.Declaration.Roster) > 0
				sawSkipped = sawSkipped || len(got.Skipped) > 0
				sawFailed = sawFailed || gotErr != nil && strings.Contains(gotErr.Error(), "injected")
				if r, ok := got.Declaration.Resource("forge-app"); ok && strings.HasPrefix(r.Container.Image, "10.0.0.3:5000/") {
					sawImage = true
				}
			})
		}
	}
	// The mesh must exercise what the cache could get wrong.
	if failing != "" {
		if !sawFailed {
			t.Errorf("no compose failed on the reads of %s", failing)
		}
		return
	}
	if !sawRoster || !sawSkipped || !sawImage {
		t.Errorf("the mesh composed no roster (%v), no skipped node (%v) or no artifact image from the store (%v)", sawRoster, sawSkipped, sawImage)
	}
}
