package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"meshplane/agent"
	"meshplane/internal/meshtest"
)

// TestProcessUpOnceDockerTwoDataDirs: two data directories on one engine,
// each running the example with the same node and module names (two
// checkouts of the README's first command). Both converge, neither's
// apply fails nor churns, and the engine runs one container for each,
// carrying its own data directory's id in its name and label (the second
// used to fail on the first's container name, local-hello-web, and report
// a churn loop). Without an engine the test fails under CI=true, and
// elsewhere skips, loudly.
func TestProcessUpOnceDockerTwoDataDirs(t *testing.T) {
	meshtest.NeedEngine(t)
	eng, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	node := meshtest.RandomNodeName(t)
	byNode := filters.NewArgs(filters.Arg("label", agent.LabelNode+"="+node))
	datas := []string{t.TempDir(), t.TempDir()}
	for i, data := range datas {
		path, storeAt := localExample(t, node) // each its own artifact store's port
		t.Cleanup(func() { meshtest.RemoveNode(t, eng, byNode, storeAt) })
		code, out, errOut := upLocal(t, nil, data, path)
		if code != exitOK {
			t.Fatalf("data directory %d: exit %d\n%s%s", i+1, code, out, errOut)
		}
		if want := fmt.Sprintf("%-8s sync in-sync    health starting", node); !strings.Contains(out, want) { // run less than min_healthy
			t.Errorf("data directory %d: output does not say %q:\n%s", i+1, want, out)
		}
		_, churn, _ := meshtest.CLI(t, nil, "churn", "--data", data)
		if !strings.HasPrefix(churn, "no churn") {
			t.Errorf("data directory %d: churn:\n%s", i+1, churn)
		}
	}
	cs, err := eng.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byNode})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]string{}
	for _, c := range cs {
		owners[c.Labels[agent.LabelData]] = strings.Join(c.Names, ",")
		if c.State != container.StateRunning {
			t.Errorf("container %v: %s, want running", c.Names, c.State)
		}
	}
	if len(cs) != 2 || len(owners) != 2 {
		t.Fatalf("containers of %s: %v, want two, one per data directory", node, owners)
	}
}
