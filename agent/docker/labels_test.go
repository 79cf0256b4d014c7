package docker_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"meshplane/agent"
	"meshplane/agent/docker"
)

// withLabels gives a runtime Options.Labels.
func withLabels(l map[string]string) rtOption { return func(o *docker.Options) { o.Labels = l } }

// TestOtherMeshesAreLeftAlone: two meshes on one engine whose nodes have
// the same name (two data directories each running `mesh up`'s local),
// told apart by their data directory's label: what each makes carries its
// own, and neither lists, changes or removes the other's. A container
// without the label (made before it was given) is still its node's.
func TestOtherMeshesAreLeftAlone(t *testing.T) {
	setup(t)
	node := randomNode(t)
	a := newRTFor(t, node, node+"-a-", t.TempDir(), eng, withLabels(map[string]string{agent.LabelData: "aaaa"}))
	b := newRTFor(t, node, node+"-b-", t.TempDir(), eng, withLabels(map[string]string{agent.LabelData: "bbbb"}))
	agA, agB := newAgent(t, a, node), newAgent(t, b, node)
	ctx := context.Background()

	if o := apply(t, agA, decl(node, "1", hosts1, forge("/srv/forge")...)); len(o.Failed) != 0 {
		t.Fatalf("a's apply failed: %+v", o.Failed)
	}
	in := a.inspect(t, "web")
	if got := in.Config.Labels[agent.LabelData]; got != "aaaa" {
		t.Errorf("a's container carries %s=%q, want aaaa", agent.LabelData, got)
	}
	if got := in.Config.Labels[agent.LabelNode]; got != node {
		t.Errorf("a's container carries %s=%q", agent.LabelNode, got)
	}
	nw, err := eng.NetworkInspect(ctx, a.EngineName("mesh"), network.InspectOptions{})
	if err != nil || nw.Labels[agent.LabelData] != "aaaa" || nw.Labels[agent.LabelNode] != node {
		t.Errorf("a's network labels %v (%v), want the node's and aaaa", nw.Labels, err)
	}

	// b sees nothing of a's, and its apply of nothing removes nothing.
	if got, err := b.ListContainers(ctx); err != nil || len(got) != 0 {
		t.Fatalf("b lists %+v (%v), want nothing", got, err)
	}
	if o := apply(t, agB, decl(node, "1", "")); len(o.Removed) != 0 {
		t.Fatalf("b removed %v", o.Removed)
	}
	if err := b.RemoveContainer(ctx, "web"); !errors.Is(err, agent.ErrNotFound) {
		t.Errorf("b removes a's web: %v, want ErrNotFound", err)
	}
	if in := a.inspect(t, "web"); !in.State.Running {
		t.Fatal("b's apply stopped a's web")
	}

	// A container of the node without the label (an agent's before it had
	// one) is taken as its own by both, as before there was a label.
	c, err := eng.ContainerCreate(ctx, &container.Config{Image: testRef, Labels: map[string]string{
		agent.LabelManaged: "true", agent.LabelNode: node, agent.LabelResource: "legacy",
	}}, nil, nil, nil, a.prefix+"legacy")
	if err != nil {
		t.Fatal(err)
	}
	listed := func(r rt) []string {
		got, err := r.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		return names
	}
	if got := listed(a); !slices.Equal(got, []string{"legacy", "web"}) {
		t.Errorf("a lists %v, want [legacy web]", got)
	}
	if got := listed(b); !slices.Equal(got, []string{"legacy"}) {
		t.Errorf("b lists %v, want [legacy]", got)
	}
	if err := eng.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
		t.Error(err)
	}
}

// TestLabelsCannotBeTheRuntimes: Options.Labels may not name a label the
// runtime sets itself.
func TestLabelsCannotBeTheRuntimes(t *testing.T) {
	for _, k := range []string{agent.LabelNode, agent.LabelManaged, agent.LabelSpec, ""} {
		_, err := docker.New(docker.Options{Node: "n1", Labels: map[string]string{k: "x"}})
		if !errors.Is(err, agent.ErrInvalid) {
			t.Errorf("label %q: %v, want ErrInvalid", k, err)
		}
	}
	if _, err := docker.New(docker.Options{Node: "n1", Labels: map[string]string{agent.LabelData: "x"}}); err != nil {
		t.Errorf("label %s: %v", agent.LabelData, err)
	}
}
