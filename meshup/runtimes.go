package meshup

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"meshplane/agent/docker"
)

// engineTimeout bounds the ping that says whether an engine answers.
const engineTimeout = 3 * time.Second

// Runtimes is the runtime each node of mf runs on: sim, but docker for a
// node that asks for it when the engine the environment names (DOCKER_HOST,
// else the default socket) answers. When none answers it says so, in one
// line to w, and those nodes are simulated; else it says which run on it.
func Runtimes(ctx context.Context, mf File, w io.Writer) map[string]string {
	rts := map[string]string{}
	var local []string
	for _, n := range mf.Nodes {
		rts[n.Name] = RuntimeSim
		if n.Runtime == RuntimeDocker {
			local = append(local, n.Name)
		}
	}
	if len(local) == 0 {
		return rts
	}
	pctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	if err := docker.Reachable(pctx); err != nil {
		// "no Docker engine reachable at HOST: why: node local on the
		// simulated runtime instead": one line.
		fmt.Fprintf(w, "%s: %s on the simulated runtime instead\n", strings.TrimPrefix(err.Error(), "docker: "), joinNodes(local))
		return rts
	}
	for _, n := range local {
		rts[n] = RuntimeDocker
	}
	fmt.Fprintf(w, "Docker engine reachable: %s on it, running real containers\n", joinNodes(local))
	return rts
}

// joinNodes names ns: "node a", "nodes a, b".
func joinNodes(ns []string) string {
	if len(ns) == 1 {
		return "node " + ns[0]
	}
	return "nodes " + strings.Join(ns, ", ")
}
