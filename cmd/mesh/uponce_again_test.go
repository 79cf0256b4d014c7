package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"meshplane/api"
	"meshplane/internal/meshtest"
	"meshplane/projections"
)

// TestProcessUpOnceTwiceDoesNotChurn: the README's first command run twice
// on one data directory (no engine: every node simulated, each agent a
// process of its own). The second run's agents are new processes; each
// finds its simulated node as the first left it (agentd.SimStateFile), so
// its apply creates, replaces and removes nothing, and no node is churning
// (issue 20: each used to start from an empty node and recreate
// everything, a second heavy pass with no command between, a churn loop).
func TestProcessUpOnceTwiceDoesNotChurn(t *testing.T) {
	node := meshtest.RandomNodeName(t)
	path, _ := localExample(t, node)
	env := []string{"DOCKER_HOST=unix://" + filepath.Join(t.TempDir(), "no-docker.sock")}
	data := t.TempDir()
	for run := 1; run <= 2; run++ {
		if code, out, errOut := upLocal(t, env, data, path); code != exitOK {
			t.Fatalf("run %d: exit %d\n%s%s", run, code, out, errOut)
		}
	}
	code, out, errOut := meshtest.CLI(t, env, "status", "-o", "json", "--data", data)
	if code != exitOK {
		t.Fatalf("status: exit %d\n%s%s", code, out, errOut)
	}
	var st []api.NodeStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if len(st) != 3 {
		t.Fatalf("status of %d nodes, want 3: %s", len(st), out)
	}
	for _, n := range st {
		// novox holds route-proxy's found directory until it is taken
		// (seed 002): waiting on take is its converged state.
		want := projections.HealthConverged
		if n.Node == "novox" {
			want = projections.HealthWaitingOnTake
		}
		if n.Churn || n.Health != want || n.Sync != projections.SyncInSync {
			t.Errorf("%s after two runs: sync %s, health %s, churn %v; want in-sync, %s, no churn", n.Node, n.Sync, n.Health, n.Churn, want)
		}
		if n.Applied == nil {
			t.Errorf("%s: no apply recorded", n.Node)
			continue
		}
		if r := n.Applied.Report; len(r.Created)+len(r.Replaced)+len(r.Removed) != 0 || r.Unchanged == 0 {
			t.Errorf("%s: the second run's apply changed something: %s (created %v, replaced %v, removed %v)", n.Node, n.Applied.Summary, r.Created, r.Replaced, r.Removed)
		}
	}
	_, churn, _ := meshtest.CLI(t, env, "churn", "--data", data)
	if !strings.HasPrefix(churn, "no churn") {
		t.Errorf("churn after a second run:\n%s", churn)
	}
}
