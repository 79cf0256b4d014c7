package main

// What `mesh up` asks of this machine for the nodes of a mesh file: the
// runtime each node's agent runs on (runtime: docker, when an engine
// answers), and where the agent of the node holding the artifact store
// serves it (its builds are meshup's).

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"meshplane/agent/docker"
	"meshplane/meshup"
)

// engineTimeout bounds the ping that says whether an engine answers.
const engineTimeout = 3 * time.Second

// nodeRuntimes is the runtime each node of mf runs on: sim, but docker for a
// node that asks for it when the engine the environment names (DOCKER_HOST,
// else the default socket) answers. When none answers it says so, in one
// line, and those nodes are simulated.
func (e *env) nodeRuntimes(ctx context.Context, mf meshup.File) map[string]string {
	rts := map[string]string{}
	var local []string
	for _, n := range mf.Nodes {
		rts[n.Name] = runtimeSim
		if n.Runtime == runtimeDocker {
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
		fmt.Fprintf(e.stdout, "%s: %s on the simulated runtime instead\n", strings.TrimPrefix(err.Error(), "docker: "), joinNodes(local))
		return rts
	}
	for _, n := range local {
		rts[n] = runtimeDocker
	}
	fmt.Fprintf(e.stdout, "Docker engine reachable: %s on it, running real containers\n", joinNodes(local))
	return rts
}

func joinNodes(ns []string) string {
	if len(ns) == 1 {
		return "node " + ns[0]
	}
	return "nodes " + strings.Join(ns, ", ")
}

// storeServed is where the agent of the node holding mf's artifact store
// serves it, when that node runs on this machine's engine: at its private
// address (else loopback) and its artifact-store port. "" when no such
// node: a simulated node serves nothing.
func storeServed(mf meshup.File, rts map[string]string) (node, addr string) {
	for _, n := range mf.Nodes {
		if n.ArtifactStore == 0 || rts[n.Name] != runtimeDocker {
			continue
		}
		host := n.PrivateAddress
		if host == "" {
			host = "127.0.0.1"
		}
		return n.Name, net.JoinHostPort(host, strconv.Itoa(n.ArtifactStore))
	}
	return "", ""
}

// storeFree checks that nothing listens on addr yet, so that an agent that
// could not serve the artifact store there fails up at once, not after
// storeTimeout.
func storeFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("the artifact store's address %s: %w (another mesh up running? change the node's artifact-store port in the mesh file)", addr, err)
	}
	return ln.Close()
}
