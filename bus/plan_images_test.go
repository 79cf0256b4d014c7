package bus_test

import (
	"context"
	"reflect"
	"testing"

	"meshplane/agent"
	"meshplane/bus/natstest"
	"meshplane/declaration"
)

// TestDryRunCarriesImages: what the agent found of each image a plan
// needs comes back over the bus with its preview (mesh plan shows it).
func TestDryRunCarriesImages(t *testing.T) {
	s := natstest.Start(t)
	ctl := natstest.Controller(t, s)
	ctx := ctxT(t)
	images := []agent.ImageCheck{
		{Image: "127.0.0.1:5000/forge/web@sha256:bb", State: agent.ImagePullable, Containers: []string{"web"}},
		{Image: "127.0.0.1:5000/forge/ghost@sha256:00", State: agent.ImageUnavailable, Detail: "manifest unknown", Containers: []string{"cron", "mail"}},
	}
	n := natstest.Node(t, s, "a")
	stop, err := n.ServeDryRuns(ctx, func(_ context.Context, d declaration.Declaration) (agent.Preview, error) {
		return agent.Preview{Node: "a", Declaration: d.ID, Images: images}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pv, err := ctl.DryRun(ctx, decl("a", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pv.Images, images) {
		t.Fatalf("images %+v, want %+v", pv.Images, images)
	}
}
